// The vCPU entry states, read back from KVM. Needs /dev/kvm; skips where it cannot be
// opened.
#include <optional>

#include "arch/x86_64/vmm/machine/linux_boot.h"
#include "gtest/gtest.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor::x86 {
namespace {

class LinuxBootVcpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
    if (!kvm.ok()) GTEST_SKIP() << "needs /dev/kvm: " << kvm.status().message();
    kvm_.emplace(std::move(*kvm));
    absl::StatusOr<KvmVm> vm = kvm_->CreateVm();
    ASSERT_TRUE(vm.ok()) << vm.status();
    vm_.emplace(std::move(*vm));
    absl::StatusOr<KvmVcpu> vcpu = vm_->CreateVcpu(0);
    ASSERT_TRUE(vcpu.ok()) << vcpu.status();
    vcpu_.emplace(std::move(*vcpu));
    ASSERT_TRUE(kvm_->SupportedCpuid().ok()) << kvm_->SupportedCpuid().status();
  }

  std::optional<KvmSystem> kvm_;
  std::optional<KvmVm> vm_;
  std::optional<KvmVcpu> vcpu_;
};

TEST_F(LinuxBootVcpuTest, SixtyFourBitEntryIsLongModeWithTheBootSelectors) {
  ASSERT_TRUE(SetUpLinux64Vcpu(*vcpu_, 0x1000000, *kvm_->SupportedCpuid()).ok());
  absl::StatusOr<kvm_sregs> sregs = vcpu_->GetSregs();
  ASSERT_TRUE(sregs.ok()) << sregs.status();
  EXPECT_EQ(sregs->cr0 & 0x80000011, 0x80000011u);  // PG, ET, PE
  EXPECT_EQ(sregs->cr3, kLinuxPml4Gpa);
  EXPECT_EQ(sregs->cr4 & 0x20, 0x20u);              // PAE
  EXPECT_EQ(sregs->efer & 0x500, 0x500u);           // LME, LMA
  EXPECT_EQ(sregs->cs.selector, 0x10);
  EXPECT_EQ(sregs->cs.l, 1);
  EXPECT_EQ(sregs->cs.db, 0);
  for (const kvm_segment* s : {&sregs->ds, &sregs->es, &sregs->ss}) {
    EXPECT_EQ(s->selector, 0x18);
    EXPECT_EQ(s->base, 0u);
    EXPECT_EQ(s->limit, 0xffffffffu);
  }
  EXPECT_EQ(sregs->gdt.base, kLinuxGdtGpa);
  EXPECT_EQ(sregs->tr.selector, kLinuxSelTss);
  EXPECT_EQ(sregs->tr.type, 0xb);
  absl::StatusOr<kvm_regs> regs = vcpu_->GetRegs();
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->rip, 0x1000000u);
  EXPECT_EQ(regs->rsi, kLinuxBootParamsGpa);
  EXPECT_EQ(regs->rsp, kLinuxBootStackTop);
  EXPECT_EQ(regs->rflags & 0x200, 0u);  // interrupts off
}

TEST_F(LinuxBootVcpuTest, PvhEntryIsFlat32BitProtectedModeWithoutPaging) {
  ASSERT_TRUE(SetUpPvhVcpu(*vcpu_, 0x1000000 + 0x1234, *kvm_->SupportedCpuid()).ok());
  absl::StatusOr<kvm_sregs> sregs = vcpu_->GetSregs();
  ASSERT_TRUE(sregs.ok()) << sregs.status();
  EXPECT_EQ(sregs->cr0 & 0x80000011, 0x11u);  // PE, ET; paging off
  EXPECT_EQ(sregs->cr4 & 0x20, 0u);
  EXPECT_EQ(sregs->efer & 0x500, 0u);
  EXPECT_EQ(sregs->cs.selector, 0x08);
  EXPECT_EQ(sregs->cs.db, 1);
  EXPECT_EQ(sregs->cs.l, 0);
  EXPECT_EQ(sregs->ds.selector, 0x18);
  EXPECT_EQ(sregs->tr.type, 0xb);
  absl::StatusOr<kvm_regs> regs = vcpu_->GetRegs();
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_EQ(regs->rip, 0x1001234u);
  EXPECT_EQ(regs->rbx, kLinuxPvhStartInfoGpa);
  EXPECT_EQ(regs->rflags & 0x200, 0u);
}

}  // namespace
}  // namespace sigvisor::x86
