// The machine's vdso page on the interpreter: one host page holding the ABI's
// trampoline, behind every core at kVdsoAddress; fetches from it counted per I-cache
// line (one per trip through the trampoline); every store to it, however it is
// mapped, a fault that is counted and changes nothing.
#include "arch/mips/vmm/vdso_page.h"

#include <cstring>

#include "arch/mips/vmm/mips_encode.h"
#include "arch/mips/vmm/mips_test_machine.h"
#include "gtest/gtest.h"

namespace sigvisor::mips {
namespace {

using namespace encode;  // NOLINT: the instruction mnemonics

constexpr uint32_t kVdsoKseg0 = 0x80000000u + static_cast<uint32_t>(kVdsoAddress);
constexpr uint32_t kVdsoKseg1 = 0xa0000000u + static_cast<uint32_t>(kVdsoAddress);
constexpr uint32_t kUserPage = 0x00400000;   // mapped to the vdso by MapVdsoAtUserPage
constexpr uint32_t kStatusUser = 2u << 3;    // KSU = user
constexpr uint32_t kTrampoline0 = 0x2402000f;  // li v0, 15
constexpr uint32_t kTrampoline1 = 0x0000000c;  // syscall

uint32_t Word(const VdsoPage& page, size_t offset) {
  uint32_t v;
  std::memcpy(&v, page.bytes().data() + offset, 4);
  return v;
}

// Maps virtual page kUserPage (ASID 5) to the vdso page with the given EntryLo0 bits.
void MapVdsoAtUserPage(TestMachine& m, uint32_t lo_flags) {
  m.core().WriteCp0(kCp0EntryHi, 0, kUserPage | 5);
  m.core().WriteCp0(kCp0EntryLo0, 0, static_cast<uint32_t>(kVdsoAddress >> 12) << 6 | lo_flags);
  m.core().WriteCp0(kCp0EntryLo1, 0, 0);
  m.core().WriteCp0(kCp0PageMask, 0, 0);
  m.core().WriteCp0(kCp0Index, 0, 3);
  m.Load(TestMachine::kCode + 400, {Tlbwi()});
  m.core().set_pc(TestMachine::kCode + 400);
  m.Step(1);
  m.core().set_pc(TestMachine::kCode);
}

TEST(VdsoPageTest, HoldsTheAbisTrampolineAndZerosElsewhere) {
  const VdsoPage page;
  EXPECT_EQ(Word(page, SIGVISOR_VDSO_RT_SIGRETURN_OFFSET), kTrampoline0);
  EXPECT_EQ(Word(page, SIGVISOR_VDSO_RT_SIGRETURN_OFFSET + 4), kTrampoline1);
  size_t nonzero = 0;
  for (uint8_t byte : page.bytes()) nonzero += byte != 0;
  EXPECT_EQ(nonzero, 3u + 1u);  // 0f 00 02 24, 0c 00 00 00
  EXPECT_TRUE(page.Intact());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(page.bytes().data()) % VdsoPage::kBytes, 0u);
}

TEST(VdsoPageTest, EveryCoreReadsTheOneHostPage) {
  TestMachine m(4, MipsSystem::kDefaultQuantum, /*vdso=*/true);
  ASSERT_NE(m.system().vdso(), nullptr);
  EXPECT_EQ(m.system().vdso_address(), kVdsoAddress);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m.core(i).vdso_host(), m.system().vdso()->bytes().data());
  // Each core loads the trampoline through kseg1; then the VMM changes its page and
  // every core, its soft TLB warm, sees the change: there is no copy per core.
  m.Load({Lui(kT0, kVdsoKseg1 >> 16), Lw(kT1, 0, kT0), Lw(kT2, 0, kT0)});
  for (int i = 0; i < 4; ++i) {
    m.Step(2, i);
    EXPECT_EQ(m.core(i).gpr(kT1), kTrampoline0) << "core " << i;
  }
  const uint32_t changed = 0x12345678;
  std::memcpy(m.system().mutable_vdso()->host(), &changed, 4);
  for (int i = 0; i < 4; ++i) {
    m.Step(1, i);
    EXPECT_EQ(m.core(i).gpr(kT2), changed) << "core " << i;
  }
}

TEST(VdsoPageTest, AUserReturnThroughTheTrampolineIsOneFetch) {
  TestMachine m(1, MipsSystem::kDefaultQuantum, /*vdso=*/true);
  MapVdsoAtUserPage(m, kEntryLoV);  // read-only, as the guest kernel maps it
  for (uint64_t trip = 1; trip <= 3; ++trip) {
    m.core().WriteCp0(kCp0Status, 0, kStatusCU0 | kStatusUser);
    m.core().set_pc(kUserPage);  // a handler's `jr ra`, ra = the trampoline
    m.Step(2);                   // li v0, 15; syscall
    EXPECT_EQ(m.core().gpr(kV0), 15u);
    EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kSyscall));
    EXPECT_EQ(m.core().epc(), kUserPage + 4);
    EXPECT_EQ(m.core().counters().syscalls, trip);
    EXPECT_EQ(m.core().counters().vdso_fetches, trip);  // two words, one line: one fetch
  }
  EXPECT_EQ(m.core().counters().vdso_writes, 0u);
}

TEST(VdsoPageTest, FetchesAreCountedPerLineRunInto) {
  TestMachine m(1, MipsSystem::kDefaultQuantum, /*vdso=*/true);
  // Into the first line's last two words (nops: the page is zero there), on into
  // the second line: two fetches.
  m.Load({Lui(kT0, kVdsoKseg0 >> 16), Ori(kT0, kT0, 0x18), Jr(kT0), Nop()});
  m.Step(4 + 3);  // to 0x18, 0x1c, 0x20
  EXPECT_EQ(m.core().pc(), kVdsoKseg0 + 0x24);
  EXPECT_EQ(m.core().counters().vdso_fetches, 2u);
  EXPECT_EQ(m.core().counters().exceptions, 0u);
}

TEST(VdsoPageTest, WithoutThePageItsAddressIsNothing) {
  TestMachine m;
  EXPECT_EQ(m.system().vdso(), nullptr);
  EXPECT_EQ(m.core().vdso_host(), nullptr);
  m.Load({Lui(kT0, kVdsoKseg1 >> 16), Lw(kT1, 0, kT0)});
  m.Step(2);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kDataBusError));
  EXPECT_EQ(m.core().counters().bus_errors, 1u);
}

// A store to the page through the TLB: TLB Modified, whatever the entry's D bit says.
TEST(VdsoPageTest, AStoreThroughTheTlbIsTlbModifiedAndChangesNothing) {
  for (uint32_t lo_flags : {kEntryLoV, kEntryLoV | kEntryLoD}) {
    SCOPED_TRACE(lo_flags);
    TestMachine m(1, MipsSystem::kDefaultQuantum, /*vdso=*/true);
    MapVdsoAtUserPage(m, lo_flags);
    m.core().WriteCp0(kCp0EntryHi, 0, 5);
    m.Load({Lui(kS0, kUserPage >> 16), Addiu(kT0, kZero, -1), Lw(kT1, 4, kS0), Sw(kT0, 4, kS0)});
    m.Step(4);
    EXPECT_EQ(m.core().gpr(kT1), kTrampoline1);  // the load went through
    EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kTlbModified));
    EXPECT_EQ(m.core().pc(), TestMachine::kGeneral);
    EXPECT_EQ(m.core().epc(), TestMachine::kCode + 12);
    EXPECT_EQ(m.core().bad_vaddr(), kUserPage + 4);
    EXPECT_EQ(m.core().entry_hi(), kUserPage | 5);
    EXPECT_EQ(m.core().counters().tlb_modified, 1u);
    EXPECT_EQ(m.core().counters().vdso_writes, 1u);
    EXPECT_TRUE(m.system().vdso()->Intact());
  }
}

// Through kseg0/kseg1 there is no TLB entry to blame: a Data Bus Error, as a store
// to ROM. Every width and kind of store, sc and swl/swr included.
TEST(VdsoPageTest, AStoreThroughKseg0OrKseg1IsABusErrorAndChangesNothing) {
  struct Store {
    const char* what;
    uint32_t insn;
  };
  for (const Store& store : {Store{"sw", Sw(kT0, 0, kS0)}, Store{"sh", Sh(kT0, 2, kS0)},
                             Store{"sb", Sb(kT0, 1, kS0)}, Store{"swl", Swl(kT0, 5, kS0)},
                             Store{"swr", Swr(kT0, 6, kS0)}}) {
    for (uint32_t base : {kVdsoKseg0, kVdsoKseg1}) {
      SCOPED_TRACE(std::string(store.what) + (base == kVdsoKseg0 ? " kseg0" : " kseg1"));
      TestMachine m(1, MipsSystem::kDefaultQuantum, /*vdso=*/true);
      m.Load({Lui(kS0, base >> 16), Addiu(kT0, kZero, -1), store.insn});
      m.Step(3);
      EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kDataBusError));
      EXPECT_EQ(m.core().epc(), TestMachine::kCode + 8);
      EXPECT_EQ(m.core().counters().vdso_writes, 1u);
      EXPECT_EQ(m.core().counters().bus_errors, 0u);  // the page is there, read-only
      EXPECT_TRUE(m.system().vdso()->Intact());
    }
  }
  TestMachine m(1, MipsSystem::kDefaultQuantum, /*vdso=*/true);
  m.Load({Lui(kS0, kVdsoKseg0 >> 16), Ll(kT0, 0, kS0), Sc(kT0, 0, kS0)});
  m.Step(3);
  EXPECT_EQ(m.exc_code(), static_cast<uint32_t>(ExcCode::kDataBusError));
  EXPECT_EQ(m.core().counters().vdso_writes, 1u);
  EXPECT_TRUE(m.system().vdso()->Intact());
}

TEST(VdsoPageTest, CreateRefusesAPageThatWouldShadowSomething) {
  std::vector<uint8_t> ram(1 << 20);
  auto device = [](uint64_t pa) { return pa >= 0x1f000000 && pa < 0x1f000004; };
  for (uint64_t at : {uint64_t{0x80000},             // in RAM
                      uint64_t{0x1f300800},          // not page-aligned
                      uint64_t{0x1f000000},          // over a host device
                      kIpiBase,                      // over the IPI device
                      uint64_t{0x20000000}}) {       // beyond kseg0/kseg1's reach
    SCOPED_TRACE(at);
    auto system = MipsSystem::Create(ram, 1, device, MipsSystem::kDefaultQuantum, at);
    EXPECT_FALSE(system.ok());
    EXPECT_NE(system.status().message().find("vdso page"), std::string::npos);
  }
  EXPECT_TRUE(MipsSystem::Create(ram, 1, device, MipsSystem::kDefaultQuantum, kVdsoAddress).ok());
}

}  // namespace
}  // namespace sigvisor::mips
