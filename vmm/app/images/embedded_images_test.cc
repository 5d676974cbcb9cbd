#include "vmm/app/images/embedded_images.h"

#include <gtest/gtest.h>

namespace sigvisor {
namespace {

TEST(KernelVariantsTest, BaselineFirstAndEveryImagePresent) {
  ASSERT_GE(KernelVariants().size(), 2u + 2 * SeedSwitches().size());
  EXPECT_EQ(KernelVariants()[0].name, "baseline");
  for (const KernelVariant& variant : KernelVariants()) {
    EXPECT_GT(variant.bytes.size(), 4096u) << variant.name;
    ASSERT_EQ(variant.values.size(), SeedSwitches().size());
    EXPECT_EQ(variant.bytes[0], 0x7f) << variant.name;  // an ELF
  }
}

TEST(KernelVariantsTest, ResolvesNamedSetsAndOverrides) {
  EXPECT_EQ((*ResolveVariant("baseline"))->name, "baseline");
  EXPECT_EQ((*ResolveVariant("accelerated"))->name, "accelerated");
  EXPECT_EQ((*ResolveVariant("dr7=lazy"))->name, "dr7=lazy");
  EXPECT_EQ((*ResolveVariant("baseline,dr7=lazy"))->name, "dr7=lazy");
  EXPECT_EQ((*ResolveVariant("accelerated,dr7=always"))->name, "accelerated,dr7=always");
  EXPECT_EQ((*ResolveVariant("accelerated,dr7=lazy"))->name, "accelerated");
  EXPECT_EQ((*ResolveVariant("dr7=always"))->name, "baseline");
  EXPECT_EQ(DescribeVariant(**ResolveVariant("pda=direct")),
            "dr7=always pda=direct uaccess=err_or dequeue=copy");
}

// debugreg is a setting, not a seed: `accelerated` leaves it native, and a pv build is
// named by the override.
TEST(KernelVariantsTest, PvBuildsAreSeedBuildsWithDebugregPv) {
  EXPECT_EQ((*ResolveVariant("debugreg=pv"))->name, "debugreg=pv");
  EXPECT_EQ((*ResolveVariant("baseline,debugreg=pv"))->name, "debugreg=pv");
  EXPECT_EQ((*ResolveVariant("dr7=lazy,debugreg=pv"))->name, "dr7=lazy,debugreg=pv");
  EXPECT_EQ((*ResolveVariant("accelerated,debugreg=pv"))->name, "accelerated,debugreg=pv");
  EXPECT_EQ((*ResolveVariant("accelerated,dr7=always,debugreg=pv"))->name,
            "accelerated,dr7=always,debugreg=pv");
  EXPECT_EQ((*ResolveVariant("debugreg=native"))->name, "baseline");
  EXPECT_TRUE(IsSeedBuild(**ResolveVariant("accelerated")));
  EXPECT_FALSE(IsSeedBuild(**ResolveVariant("debugreg=pv")));
  // The seed builds describe themselves as before; a pv build says so.
  EXPECT_EQ(DescribeVariant(**ResolveVariant("baseline")),
            "dr7=always pda=gs uaccess=err_or dequeue=copy");
  EXPECT_EQ(DescribeVariant(**ResolveVariant("debugreg=pv")),
            "dr7=always pda=gs uaccess=err_or dequeue=copy debugreg=pv");
  absl::StatusOr<const KernelVariant*> not_built = ResolveVariant("pda=direct,debugreg=pv");
  ASSERT_FALSE(not_built.ok());
  EXPECT_NE(not_built.status().message().find("not built"), absl::string_view::npos);
  absl::StatusOr<const KernelVariant*> bad = ResolveVariant("debugreg=maybe");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("native or pv (not a seed)"), absl::string_view::npos);
  size_t seed_builds = 0;
  for (const KernelVariant& v : KernelVariants()) seed_builds += IsSeedBuild(v);
  EXPECT_EQ(seed_builds, 10u);
  EXPECT_EQ(KernelVariants().size(), 18u);  // 10 seed builds, 4 debugreg=pv, 2 signal=pv, 2 smp=on
}

// signal=pv is a setting like debugreg: built on the baseline and the accelerated
// kernel only, and said after the seeds.
TEST(KernelVariantsTest, SignalPvBuilds) {
  EXPECT_EQ((*ResolveVariant("signal=pv"))->name, "signal=pv");
  EXPECT_EQ((*ResolveVariant("accelerated,signal=pv"))->name, "accelerated,signal=pv");
  EXPECT_EQ((*ResolveVariant("signal=kernel"))->name, "baseline");
  EXPECT_FALSE(IsSeedBuild(**ResolveVariant("signal=pv")));
  EXPECT_EQ(DescribeVariant(**ResolveVariant("signal=pv")),
            "dr7=always pda=gs uaccess=err_or dequeue=copy signal=pv");
  EXPECT_FALSE(ResolveVariant("dr7=lazy,signal=pv").ok());
  EXPECT_FALSE(ResolveVariant("signal=pv,debugreg=pv").ok());
}

// smp=on is a setting too: built on the baseline and on the accelerated kernel with
// pda=gs (seed 001's pda=direct is a uniprocessor shortcut: no smp=on build has it).
TEST(KernelVariantsTest, SmpBuilds) {
  EXPECT_EQ((*ResolveVariant("smp=on"))->name, "smp=on");
  EXPECT_EQ((*ResolveVariant("accelerated,pda=gs,smp=on"))->name, "accelerated,pda=gs,smp=on");
  EXPECT_EQ((*ResolveVariant("smp=off"))->name, "baseline");
  EXPECT_FALSE(IsSeedBuild(**ResolveVariant("smp=on")));
  EXPECT_EQ(DescribeVariant(**ResolveVariant("accelerated,pda=gs,smp=on")),
            "dr7=lazy pda=gs uaccess=cerr dequeue=pointer smp=on");
  absl::StatusOr<const KernelVariant*> direct = ResolveVariant("accelerated,smp=on");
  ASSERT_FALSE(direct.ok());
  EXPECT_NE(direct.status().message().find("not built"), absl::string_view::npos);
  EXPECT_FALSE(ResolveVariant("smp=on,signal=pv").ok());
}

TEST(KernelVariantsTest, RefusesWithAClearMessage) {
  absl::StatusOr<const KernelVariant*> bad_key = ResolveVariant("frob=1");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.status().message().find("dr7, pda, uaccess, dequeue"), absl::string_view::npos);
  absl::StatusOr<const KernelVariant*> bad_value = ResolveVariant("dr7=maybe");
  ASSERT_FALSE(bad_value.ok());
  EXPECT_NE(bad_value.status().message().find("always or lazy"), absl::string_view::npos);
  absl::StatusOr<const KernelVariant*> not_built = ResolveVariant("dr7=lazy,pda=direct");
  ASSERT_FALSE(not_built.ok());
  EXPECT_NE(not_built.status().message().find("not built"), absl::string_view::npos);
  EXPECT_NE(not_built.status().message().find("accelerated,dr7=always"), absl::string_view::npos);
  EXPECT_FALSE(ResolveVariant("baseline,accelerated").ok());
}

}  // namespace
}  // namespace sigvisor
