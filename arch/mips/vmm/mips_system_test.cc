// Several cores round-robin: inter-core interrupts through the IPI device, their
// counts, and the idle/halt rules of `wait`.
#include "arch/mips/vmm/mips_system.h"

#include "arch/mips/vmm/cost_model.h"
#include "arch/mips/vmm/mips_encode.h"
#include "arch/mips/vmm/mips_test_machine.h"
#include "gtest/gtest.h"

namespace sigvisor::mips {
namespace {

using namespace encode;  // NOLINT: the instruction mnemonics

constexpr uint32_t Code(int n) { return TestMachine::kCode + 4 * static_cast<uint32_t>(n); }

// Core 0 sends an IPI to every other core and spins; the others wait for it, count it
// in RAM at 0x2000 + 4 * core, acknowledge it and wait again.
void LoadIpiProgram(TestMachine& m) {
  m.Load({Bne(kA2, kZero, 6), Nop(),                      // 0: core 0 only below
          Lui(kT0, 0xbf20), Addiu(kT1, kZero, -2),        // 2: every core but 0
          Sw(kT1, 0, kT0), Beq(kZero, kZero, -1), Nop(),  // 4: SEND, spin at 5
          Nop(),                                          // 7
          Lui(kT1, 0x1000), Ori(kT1, kT1, 0x0401),        // 8: CU0 | IM2 | IE
          Mtc0(kT1, kCp0Status), Wait(), Beq(kZero, kZero, -2), Nop()});
  m.Load(TestMachine::kGeneral,
         {Lui(kK0, 0x8000), Sll(kK1, kA2, 2), Addu(kK0, kK0, kK1), Lw(kK1, 0x2000, kK0),
          Addiu(kK1, kK1, 1), Sw(kK1, 0x2000, kK0), Lui(kK0, 0xbf20), Addiu(kK1, kZero, 1),
          Sllv(kK1, kK1, kA2), Sw(kK1, 4, kK0), Eret()});
}

TEST(MipsSystemTest, IpiWakesAWaitingCore) {
  TestMachine m(2, /*quantum=*/100);
  LoadIpiProgram(m);
  for (int i = 0; i < 2; ++i) m.core(i).set_gpr(kA2, static_cast<uint32_t>(i));
  // Core 0 runs first; core 1 must already wait when the IPI comes, or it would take
  // it at once: give core 1 a head start.
  m.core(1).set_pc(Code(8));
  SystemEvent e = m.system().Run(5000);
  EXPECT_EQ(e.stop, SystemStop::kBudget);
  EXPECT_EQ(m.Peek32(0x2004), 1u);
  EXPECT_EQ(m.core(1).counters().interrupts, 1u);
  EXPECT_EQ(m.core(0).counters().ipis_sent, 1u);
  EXPECT_EQ(m.core(1).counters().ipis_sent, 0u);
  EXPECT_EQ(m.system().ipi_pending(), 0u);
  EXPECT_TRUE(m.core(1).waiting());
  EXPECT_EQ(m.system().Total().ipis_sent, 1u);
  const CoreCounters& c0 = m.core(0).counters();
  EXPECT_EQ(c0.modelled_cycles(), c0.instructions + CostModel::kCyclesPerIpiSent);
}

TEST(MipsSystemTest, IpiToManyCoresCountsOnePerTarget) {
  TestMachine m(4, /*quantum=*/50);
  LoadIpiProgram(m);
  for (int i = 0; i < 4; ++i) {
    m.core(i).set_gpr(kA2, static_cast<uint32_t>(i));
    if (i > 0) m.core(i).set_pc(Code(8));
  }
  m.system().Run(20000);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(m.Peek32(0x2000 + 4 * static_cast<uint32_t>(i)), 1u) << "core " << i;
    EXPECT_EQ(m.core(i).counters().interrupts, 1u);
  }
  EXPECT_EQ(m.core(0).counters().ipis_sent, 3u);
}

TEST(MipsSystemTest, TheDeviceReportsCoresAndPending) {
  TestMachine m(3);
  uint32_t v = 0;
  EXPECT_EQ(m.system().Access(0, kIpiBase + kIpiCoreCount, 4, false, v), PhysicalAccess::kDone);
  EXPECT_EQ(v, 3u);
  v = 0xffffffffu;  // bits past the last core are ignored
  m.system().Access(0, kIpiBase + kIpiSend, 4, true, v);
  EXPECT_EQ(m.system().ipi_pending(), 7u);
  EXPECT_EQ(m.core(0).counters().ipis_sent, 3u);
  v = 2;
  m.system().Access(0, kIpiBase + kIpiAck, 4, true, v);
  m.system().Access(0, kIpiBase + kIpiPending, 4, false, v);
  EXPECT_EQ(v, 5u);
  EXPECT_NE(m.core(2).cause() & kCauseIP2, 0u);
  EXPECT_EQ(m.core(1).cause() & kCauseIP2, 0u);
  EXPECT_EQ(m.system().Access(0, 0x1fc00000, 4, false, v), PhysicalAccess::kBusError);
  EXPECT_EQ(m.system().Access(0, TestMachine::kDeviceBase, 4, false, v), PhysicalAccess::kExit);
}

TEST(MipsSystemTest, RoundRobinIsDeterministic) {
  auto run = [] {
    TestMachine m(3, /*quantum=*/7);
    LoadIpiProgram(m);
    for (int i = 0; i < 3; ++i) m.core(i).set_gpr(kA2, static_cast<uint32_t>(i));
    m.system().Run(3333);
    std::vector<uint64_t> out;
    for (int i = 0; i < 3; ++i) {
      out.push_back(m.core(i).counters().instructions);
      out.push_back(m.core(i).counters().interrupts);
      out.push_back(m.core(i).pc());
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

TEST(MipsSystemTest, CoreCountsOutsideTheRangeAreRefused) {
  std::vector<uint8_t> ram(1 << 16);
  EXPECT_FALSE(MipsSystem::Create(ram, 0, nullptr).ok());
  EXPECT_FALSE(MipsSystem::Create(ram, kMaxCores + 1, nullptr).ok());
  EXPECT_FALSE(MipsSystem::Create(ram, 1, nullptr, 0).ok());
}

TEST(MipsSystemTest, SwitchingCoresBreaksTheLink) {
  TestMachine m(2, /*quantum=*/3);
  // Each core: ll, then two nops, then sc: the quantum ends between ll and sc, the
  // other core runs, and the sc fails; a retry loop then succeeds.
  m.Load({Lui(kS0, 0x8000), Ll(kT0, 0x2000, kS0), Addiu(kT0, kT0, 1), Sc(kT0, 0x2000, kS0),
          Beq(kT0, kZero, -4), Nop(), Beq(kZero, kZero, -1), Nop()});
  m.system().Run(2000);
  EXPECT_EQ(m.Peek32(0x2000), 2u);  // both increments landed, neither was lost
}

TEST(MipsSystemTest, SendingAnIpiYieldsToTheTargets) {
  TestMachine m(2, /*quantum=*/1000);
  LoadIpiProgram(m);
  for (int i = 0; i < 2; ++i) m.core(i).set_gpr(kA2, static_cast<uint32_t>(i));
  m.core(1).set_pc(Code(8));
  // Core 0: bne, nop, lui, addiu, sw SEND (5 instructions), then yields; core 1 was
  // never run, so it has not reached `wait` yet: it runs its 3 set-up instructions,
  // waits (4), takes the IPI at once (ExcCode 0) and runs the handler.
  m.system().Run(5);
  EXPECT_EQ(m.core(0).counters().instructions, 5u);
  EXPECT_EQ(m.system().current_core(), 1);
}

}  // namespace
}  // namespace sigvisor::mips
