#include "vmm/app/launch/workloads.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace sigvisor::launch {
namespace {

using Names = std::vector<std::string>;

// Every list the VMM keeps of workloads is the catalogue's rows, in its order: the
// inits' (each init's refusal names the same, tests/cli_test.cc), bench's, --warmup's.
TEST(WorkloadCatalogueTest, EachListIsTheCataloguesRowsForIt) {
  EXPECT_EQ(BundledKernelWorkloadNames(),
            (Names{"summary", "divzero", "lat_sig", "sigpingpong", "pipe_rw", "xcpu_pingpong",
                   "xcpu_kick", "xcpu_wake", "hello", "console", "hostsig", "fault", "selftest"}));
  EXPECT_EQ(LinuxInitWorkloadNames(),
            (Names{"summary", "all", "divzero", "lat_sig", "sigpingpong", "pipe_rw",
                   "xcpu_pingpong", "xcpu_kick", "xcpu_wake", "selftest"}));
  EXPECT_EQ(BenchWorkloadNames(),
            (Names{"divzero", "lat_sig", "sigpingpong", "pipe_rw", "xcpu_pingpong", "xcpu_kick",
                   "xcpu_wake", "hello", "console"}));
  EXPECT_EQ(BenchDefaultWorkloadNames(), (Names{"divzero", "lat_sig", "sigpingpong", "pipe_rw"}));
  EXPECT_EQ(WarmedWorkloadNames(),
            (Names{"summary", "all", "divzero", "lat_sig", "sigpingpong", "pipe_rw",
                   "xcpu_pingpong", "xcpu_kick", "xcpu_wake"}));
}

TEST(WorkloadCatalogueTest, RowsAreUniqueAndSayWhatTheyDo) {
  std::set<std::string_view> seen;
  for (const Workload& w : Workloads()) {
    EXPECT_TRUE(seen.insert(w.name).second) << w.name << " twice";
    EXPECT_FALSE(w.what.empty()) << w.name;
    // bench boots the bundled kernel (and Linux as a build): what it takes, that kernel runs.
    if (w.bench != InBench::kNo) EXPECT_NE(w.inits, Inits::kLinux) << w.name;
  }
  ASSERT_NE(FindWorkload("divzero"), nullptr);
  EXPECT_TRUE(FindWorkload("divzero")->warmup);
  EXPECT_EQ(FindWorkload("nosuch"), nullptr);
}

// The workloads across CPUs say so in their rows; a run of one on fewer vCPUs is refused
// in one line that names what to give, before any boot.
TEST(WorkloadCatalogueTest, AWorkloadAcrossCpusNeedsTwoVcpus) {
  for (const Workload& w : Workloads()) {
    EXPECT_EQ(w.vcpus, std::string_view(w.name).starts_with("xcpu_") ? 2 : 1) << w.name;
  }
  EXPECT_EQ(WorkloadVcpus("xcpu_wake"), 2);
  EXPECT_EQ(WorkloadVcpus("divzero"), 1);
  EXPECT_EQ(WorkloadVcpus(""), 1);  // the image's default
  EXPECT_TRUE(CheckWorkloadVcpus("xcpu_kick", 2).ok());
  EXPECT_TRUE(CheckWorkloadVcpus("divzero", 1).ok());
  // Not this check's to refuse: --vcpus 0 is --vcpus's own error (multiboot_test).
  EXPECT_TRUE(CheckWorkloadVcpus("", 0).ok());
  EXPECT_TRUE(CheckWorkloadVcpus("divzero", -3).ok());
  const absl::Status refused = CheckWorkloadVcpus("xcpu_kick", 1);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "--workload xcpu_kick runs across CPUs: it needs 2 vCPUs, and this machine has 1 "
            "(`run --vcpus 2` gives it them)");
}

}  // namespace
}  // namespace sigvisor::launch
