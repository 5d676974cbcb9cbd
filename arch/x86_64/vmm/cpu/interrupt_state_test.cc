#include "arch/x86_64/vmm/cpu/interrupt_state.h"

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor::x86 {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

void SetVector(kvm_lapic_state& lapic, size_t offset, int vector) {
  uint32_t bits;
  char* word = lapic.regs + offset + 0x10 * (vector / 32);
  std::memcpy(&bits, word, sizeof(bits));
  bits |= 1u << (vector % 32);
  std::memcpy(word, &bits, sizeof(bits));
}

TEST(InterruptStateTest, VectorsAreReadFromEachWordOfTheRegisterArray) {
  kvm_lapic_state lapic = {};
  SetVector(lapic, 0x200, 0xfd);
  SetVector(lapic, 0x200, 0x20);
  SetVector(lapic, 0x200, 0x21);
  SetVector(lapic, 0x100, 0xef);
  EXPECT_THAT(LapicVectors(lapic, 0x200), ElementsAre(0x20, 0x21, 0xfd));
  EXPECT_THAT(LapicVectors(lapic, 0x100), ElementsAre(0xef));
  EXPECT_THAT(LapicVectors(lapic, 0x180), IsEmpty());
}

TEST(InterruptStateTest, ARegisterArrayPastTheEndOfThePageIsNotRead) {
  kvm_lapic_state lapic = {};
  std::memset(lapic.regs, 0xff, sizeof(lapic.regs));
  // 0x3f0 holds one word only: the seven after it would lie outside the 1 KiB page.
  EXPECT_EQ(LapicVectors(lapic, 0x3f0).size(), 32u);
}

TEST(InterruptStateTest, AHaltedVcpuWithAPendingIpiSaysSo) {
  kvm_lapic_state lapic = {};
  SetVector(lapic, 0x200, 0xfd);
  InterruptState state{
      .mp_state = KVM_MP_STATE_HALTED, .interrupts_enabled = true, .lapic = VectorSetsOf(lapic)};
  EXPECT_EQ(DescribeInterruptState(state),
            "halted, interrupts on, LAPIC pending 0xfd, in service none");
}

TEST(InterruptStateTest, WithoutAnIrqchipOnlyTheCpusOwnStateIsGiven) {
  EXPECT_EQ(DescribeInterruptState({.mp_state = KVM_MP_STATE_RUNNABLE}),
            "runnable, interrupts off");
  EXPECT_EQ(DescribeInterruptState({.interrupts_enabled = true}), "interrupts on");
}

}  // namespace
}  // namespace sigvisor::x86
