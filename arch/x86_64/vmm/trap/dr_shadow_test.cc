// Lazy DR7: sequences of guest debug-register writes and the exact number of
// hardware loads each costs; reads return the shadow; DR6 catches up with #DBs the
// hardware delivered.
#include "arch/x86_64/vmm/trap/dr_shadow.h"

#include <gtest/gtest.h>

#include "arch/x86_64/vmm/trap/fake_trap_cpu.h"

namespace sigvisor::trap {
namespace {

constexpr uint64_t kL0 = 1u << 0;
constexpr uint64_t kG0 = 1u << 1;
constexpr uint64_t kL1 = 1u << 2;
constexpr uint64_t kLe = 1u << 8;
constexpr uint64_t kGe = 1u << 9;
constexpr uint64_t kRw0Write = 1u << 16;  // RW0 = 01: data writes
constexpr uint64_t kLen0Four = 3u << 18;  // LEN0 = 11: 4 bytes

class DrShadowTest : public ::testing::Test {
 protected:
  void Write(int n, uint64_t value) { ASSERT_TRUE(shadow_.Write(n, value, hw_).ok()); }
  uint64_t Read(int n) {
    absl::StatusOr<uint64_t> value = shadow_.Read(n, hw_);
    EXPECT_TRUE(value.ok());
    return value.value_or(0);
  }

  FakeTrapCpu hw_;
  DrShadow shadow_{DebugRegs{}};
};

TEST_F(DrShadowTest, UnconditionalDr7WritesWithoutEnablesCostNoLoad) {
  // The 2004 signal path: DR7 = the task's (zero) DR7 on every delivery.
  for (int i = 0; i < 100; ++i) Write(7, 0);
  EXPECT_EQ(shadow_.loads(), 0u);
  EXPECT_EQ(hw_.debug_sets, 0);
  // Bits that enable nothing: LE, GE, GD, reserved-as-written bits.
  Write(7, kLe | kGe);
  Write(7, kDr7Gd);
  Write(7, 0x400);
  EXPECT_EQ(shadow_.loads(), 0u);
}

TEST_F(DrShadowTest, ReadsReturnWhatTheGuestWroteNormalised) {
  Write(7, kLe | kGe | (1u << 12) | (1u << 14));  // bits 12, 14 read as 0
  EXPECT_EQ(Read(7), kLe | kGe | 0x400);
  Write(0, 0xffffffff81000000);
  Write(3, 0x1234);
  EXPECT_EQ(Read(0), 0xffffffff81000000);
  EXPECT_EQ(Read(3), 0x1234u);
  Write(6, 0);
  EXPECT_EQ(Read(6), 0xffff0ff0u);
  Write(6, 0xffffffff);  // only B0-B3, BD, BS, BT are writable here
  EXPECT_EQ(Read(6), 0xffffeff0u | 0xf);
  EXPECT_EQ(shadow_.loads(), 0u);  // none of it enabled a breakpoint
}

TEST_F(DrShadowTest, EnablingLoadsOnceAndOnlyEffectiveChangesLoadAgain) {
  Write(0, 0x100000);           // address of a disabled breakpoint: no load
  EXPECT_EQ(shadow_.loads(), 0u);
  Write(7, kL0);                // enable: load
  EXPECT_EQ(shadow_.loads(), 1u);
  EXPECT_EQ(hw_.debug.dr[0], 0x100000u);
  EXPECT_EQ(hw_.debug.dr7, kL0 | 0x400);
  Write(7, kL0);                // the same again: nothing
  Write(7, kL0 | kLe | kGe);    // no effect on the hardware
  Write(1, 0x200000);           // DR1 is not enabled
  EXPECT_EQ(shadow_.loads(), 1u);
  Write(0, 0x100010);           // enabled breakpoint moves: load
  EXPECT_EQ(shadow_.loads(), 2u);
  Write(7, kL0 | kRw0Write | kLen0Four);  // its type changes: load
  EXPECT_EQ(shadow_.loads(), 3u);
  Write(7, kG0 | kRw0Write | kLen0Four);  // an enable bit changes (L0 -> G0): load
  EXPECT_EQ(shadow_.loads(), 4u);
  Write(7, kG0 | kL1 | kRw0Write | kLen0Four);  // another breakpoint on: load
  EXPECT_EQ(shadow_.loads(), 5u);
  EXPECT_EQ(hw_.debug.dr[1], 0x200000u);
  Write(7, 0);                  // all off: load
  EXPECT_EQ(shadow_.loads(), 6u);
  EXPECT_EQ(hw_.debug.dr7, 0x400u);
  Write(0, 0x300000);           // disabled again: free
  Write(7, 0);
  EXPECT_EQ(shadow_.loads(), 6u);
  EXPECT_EQ(hw_.debug_sets, 6);
}

TEST_F(DrShadowTest, GeneralDetectIsEmulatedNotLoaded) {
  Write(7, kDr7Gd | kL0);
  EXPECT_EQ(shadow_.loads(), 1u);
  EXPECT_EQ(hw_.debug.dr7 & kDr7Gd, 0u);  // never in the hardware
  absl::StatusOr<bool> gd = shadow_.GeneralDetect(hw_);
  ASSERT_TRUE(gd.ok());
  EXPECT_TRUE(*gd);
  shadow_.RaiseGeneralDetect();
  EXPECT_EQ(Read(6), 0xffff0ff0u | kDr6Bd);
  EXPECT_EQ(Read(7) & kDr7Gd, 0u);
  EXPECT_EQ(shadow_.loads(), 1u);
}

TEST_F(DrShadowTest, Dr6CatchesUpWithABreakpointTheHardwareDelivered) {
  Write(0, 0x100000);
  Write(7, kL0);
  ASSERT_EQ(shadow_.loads(), 1u);
  hw_.debug.dr6 = 0xffff0ff1;  // the breakpoint fired: KVM set B0
  EXPECT_EQ(Read(6), 0xffff0ff1u);
  // The handler clears DR6: the hardware holds B0, so this one must be loaded, or the
  // next hit would look like nothing changed.
  Write(6, 0);
  EXPECT_EQ(shadow_.loads(), 2u);
  EXPECT_EQ(hw_.debug.dr6, 0xffff0ff0u);
  hw_.debug.dr6 = 0xffff0ff1;  // fires again
  EXPECT_EQ(Read(6), 0xffff0ff1u);
  Write(7, 0);
  EXPECT_EQ(shadow_.loads(), 3u);
  EXPECT_EQ(Read(7), 0x400u);
}

TEST_F(DrShadowTest, ADeliveredDebugExceptionClearsGeneralDetect) {
  Write(0, 0x100000);
  Write(7, kL0 | kDr7Gd);
  hw_.debug.dr6 = 0xffff0ff1;  // the breakpoint fired before any DR access
  absl::StatusOr<bool> gd = shadow_.GeneralDetect(hw_);
  ASSERT_TRUE(gd.ok());
  EXPECT_FALSE(*gd);  // the CPU cleared GD entering the #DB handler
  EXPECT_EQ(Read(6), 0xffff0ff1u);
}

TEST(Dr6LayoutTest, RtmAndBusLockBitsFollowTheCpu) {
  Dr6Layout plain = Dr6Layout::ForCpu(false, false);
  EXPECT_EQ(plain.fixed_one, 0xffff0ff0u);
  EXPECT_EQ(plain.volatile_bits, 0xe00fu);
  Dr6Layout both = Dr6Layout::ForCpu(true, true);
  EXPECT_EQ(both.fixed_one, 0xfffe07f0u);
  EXPECT_EQ(both.volatile_bits, 0x1e80fu);
}

}  // namespace
}  // namespace sigvisor::trap
