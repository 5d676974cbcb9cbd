// WriteBootInfo, shared by the x86-64 and MIPS machines: the fields as the ABI header
// lays them out, the vdso page named only when a machine supplies one (x86-64 never
// does: the word stays 0, as it was when it was `reserved`), and what it refuses.
#include "vmm/machine/boot_info.h"

#include <gtest/gtest.h>

#include <cstring>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

constexpr uint64_t kMemory = 2ull << 20;

sigvisor_boot_info Written(const BootInfoParams& params) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(kMemory);
  EXPECT_TRUE(memory.ok());
  EXPECT_TRUE(WriteBootInfo(*memory, SIGVISOR_BOOT_INFO_GPA, params).ok());
  return *memory->ReadObject<sigvisor_boot_info>(SIGVISOR_BOOT_INFO_GPA);
}

TEST(BootInfoTest, WritesEveryField) {
  const sigvisor_boot_info info =
      Written({.image_end = 0x123456, .tsc_khz = 250000, .flags = 2, .cmdline = "workload=x"});
  EXPECT_EQ(info.magic, SIGVISOR_BOOT_INFO_MAGIC);
  EXPECT_EQ(info.abi_version, SIGVISOR_ABI_VERSION);
  EXPECT_EQ(info.mem_bytes, kMemory);
  EXPECT_EQ(info.free_gpa, 0x124000u);  // rounded up to a page
  EXPECT_EQ(info.tsc_khz, 250000u);
  EXPECT_EQ(info.flags, 2u);
  EXPECT_EQ(info.vdso_gpa, 0u);  // no vdso page unless the machine gives one (x86-64)
  EXPECT_STREQ(info.cmdline, "workload=x");
}

TEST(BootInfoTest, CpusAndIpiMethod) {
  const sigvisor_boot_info one = Written({});
  EXPECT_EQ(one.cpus, 1u);
  EXPECT_EQ(one.ipi, SIGVISOR_IPI_NONE);
  const sigvisor_boot_info four = Written({.cpus = 4, .ipi = SIGVISOR_IPI_PV});
  EXPECT_EQ(four.cpus, 4u);
  EXPECT_EQ(four.ipi, SIGVISOR_IPI_PV);
}

TEST(BootInfoTest, RefusesCpusOrIpiTheAbiDoesNotHave) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(kMemory);
  ASSERT_TRUE(memory.ok());
  const BootInfoParams bad[] = {
      {.cpus = 0},
      {.cpus = SIGVISOR_MAX_CPUS + 1, .ipi = SIGVISOR_IPI_X2APIC},
      {.cpus = 1, .ipi = SIGVISOR_IPI_X2APIC},  // an IPI method on one CPU
      {.cpus = 2, .ipi = SIGVISOR_IPI_NONE},    // several CPUs and no way to send IPIs
      {.cpus = 2, .ipi = SIGVISOR_IPI_PV + 1},
  };
  for (const BootInfoParams& params : bad) {
    absl::Status s = WriteBootInfo(*memory, SIGVISOR_BOOT_INFO_GPA, params);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << params.cpus << " " << params.ipi;
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s;
  }
}

TEST(BootInfoTest, NamesTheVdsoPageTheMachineSupplies) {
  EXPECT_EQ(Written({.vdso_gpa = 0x1f300000}).vdso_gpa, 0x1f300000u);
}

TEST(BootInfoTest, RefusesAVdsoPageInRamOrOffAPage) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(kMemory);
  ASSERT_TRUE(memory.ok());
  for (uint32_t gpa : {0x1000u, 0x1f300010u}) {
    absl::Status s = WriteBootInfo(*memory, SIGVISOR_BOOT_INFO_GPA, {.vdso_gpa = gpa});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << gpa;
    EXPECT_NE(s.message().find("vdso page"), std::string::npos) << s;
  }
}

TEST(BootInfoTest, NamesThePvPageOrNone) {
  EXPECT_EQ(Written({}).pv_page_gpa, 0u);
  EXPECT_EQ(Written({.pv_page_gpa = 0x8000}).pv_page_gpa, 0x8000u);
}

TEST(BootInfoTest, RefusesAPvPageOutsideRamOrOffAPage) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(kMemory);
  ASSERT_TRUE(memory.ok());
  for (uint64_t gpa : {uint64_t{0x8010}, uint64_t{kMemory}, uint64_t{kMemory - 0x800}}) {
    absl::Status s = WriteBootInfo(*memory, SIGVISOR_BOOT_INFO_GPA, {.pv_page_gpa = gpa});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << gpa;
    EXPECT_NE(s.message().find("pv page"), std::string::npos) << s;
  }
}

TEST(BootInfoTest, RefusesACommandLineTheAbiCannotHold) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(kMemory);
  ASSERT_TRUE(memory.ok());
  const std::string longest(SIGVISOR_CMDLINE_MAX - 1, 'x');
  EXPECT_TRUE(WriteBootInfo(*memory, SIGVISOR_BOOT_INFO_GPA, {.cmdline = longest}).ok());
  const std::string too_long(SIGVISOR_CMDLINE_MAX, 'x');
  EXPECT_FALSE(WriteBootInfo(*memory, SIGVISOR_BOOT_INFO_GPA, {.cmdline = too_long}).ok());
}

}  // namespace
}  // namespace sigvisor
