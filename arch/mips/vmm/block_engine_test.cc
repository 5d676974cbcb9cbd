// The block engine (mips_core_blocks.cc) against the reference interpreter: random
// programs on 1 to 3 cores, run twice, once with the engine and once without, must
// leave bit-identical machines (every register, CP0 register and counter of every
// core, RAM, the stops and MMIO exits) after every slice of every run.
//
// The programs are random but mostly well-formed: ALU operations, loads and stores
// through a few base registers (RAM on both sides of a page boundary, the code itself,
// a host device, the IPI device, the vdso page), short branches of every kind, jumps,
// CP0 and TLB operations, traps, system calls, cache operations and some random
// words; in kernel mode or in user mode through a TLB mapping; with the timer and
// IPIs interrupting them. An exception handler skips the faulting instruction.
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "arch/mips/vmm/cp0.h"
#include "arch/mips/vmm/ipi_device.h"
#include "arch/mips/vmm/mips_encode.h"
#include "arch/mips/vmm/mips_opcodes.h"
#include "arch/mips/vmm/mips_system.h"
#include "arch/mips/vmm/vdso_page.h"
#include "gtest/gtest.h"

namespace sigvisor::mips {
namespace {

using namespace encode;  // NOLINT: register names

constexpr size_t kRamBytes = 1 << 20;
constexpr uint64_t kDeviceBase = 0x1f000000;
constexpr uint32_t kCodePhys = 0x1000;  // three pages of program
constexpr uint32_t kCodeWords = 3 * 1024;
constexpr uint32_t kDataPhys = 0x10000;
constexpr uint32_t kUserBase = 0x00400000;  // maps physical 0 - 0x1ffff in user mode
constexpr uint32_t kProloguePhys = 0x400;

// Base registers the programs keep (ALU results never land in them).
constexpr uint32_t kData = 16, kPageEdge = 17, kDevice = 18, kCodeReg = 19, kData2 = 20,
                   kIpi = 21, kVdso = 22, kJumpReg = 23;

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  bool Chance(uint32_t percent) { return Below(100) < percent; }
  uint32_t Word() { return static_cast<uint32_t>(rng_()); }
  uint32_t AnyReg() { return Below(32); }
  uint32_t DestReg() {
    static constexpr uint32_t kDests[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                          24, 25, 28, 29, 30, 31, 0};
    return kDests[Below(sizeof(kDests) / sizeof(kDests[0]))];
  }
  uint32_t BaseReg() {
    const uint32_t r = Below(100);
    if (r < 40) return kData;
    if (r < 60) return kPageEdge;
    if (r < 70) return kData2;
    if (r < 80) return kCodeReg;  // self-modifying
    if (r < 85) return kDevice;
    if (r < 88) return kIpi;
    if (r < 95) return kVdso;
    return AnyReg();
  }

  // One instruction at word `index` of a program whose first word is at `base`.
  uint32_t Instruction(uint32_t base, uint32_t index) {
    const uint32_t r = Below(1000);
    if (r < 330) return AluR();
    if (r < 480) return AluI();
    if (r < 640) return Memory();
    if (r < 790) return BranchInsn();
    if (r < 820) return Jump(base);
    if (r < 870) return Special23();
    if (r < 920) return Cop0();
    if (r < 960) return Other();
    (void)index;
    return Word();
  }

 private:
  uint32_t AluR() {
    static constexpr uint32_t kFuncts[] = {
        special::kSll,  special::kSrl,  special::kSra,   special::kSllv, special::kSrlv,
        special::kSrav, special::kMovz, special::kMovn,  special::kMfhi, special::kMthi,
        special::kMflo, special::kMtlo, special::kMult,  special::kMultu, special::kDiv,
        special::kDivu, special::kAdd,  special::kAddu,  special::kSub,  special::kSubu,
        special::kAnd,  special::kOr,   special::kXor,   special::kNor,  special::kSlt,
        special::kSltu, special::kSync, special::kMovci};
    const uint32_t funct = kFuncts[Below(sizeof(kFuncts) / sizeof(kFuncts[0]))];
    // rs bit 0 (rotr) and sa bit 0 (rotrv) chosen at random with everything else.
    return R(opc::kSpecial, Chance(80) ? AnyReg() : Below(2), AnyReg(), DestReg(), Below(32),
             funct);
  }
  uint32_t AluI() {
    static constexpr uint32_t kOps[] = {opc::kAddi, opc::kAddiu, opc::kSlti, opc::kSltiu,
                                        opc::kAndi, opc::kOri,   opc::kXori, opc::kLui};
    const uint32_t op = kOps[Below(8)];
    const int32_t imm = Chance(50) ? static_cast<int32_t>(Below(64)) - 32
                                   : static_cast<int32_t>(static_cast<int16_t>(Word()));
    return I(op, AnyReg(), DestReg(), imm);
  }
  uint32_t Memory() {
    static constexpr uint32_t kOps[] = {opc::kLb,  opc::kLh,  opc::kLw,  opc::kLbu, opc::kLhu,
                                        opc::kLwl, opc::kLwr, opc::kSb,  opc::kSh,  opc::kSw,
                                        opc::kSwl, opc::kSwr, opc::kLl,  opc::kSc,  opc::kLw,
                                        opc::kSw,  opc::kLw,  opc::kSw,  opc::kLbu, opc::kSb};
    const uint32_t op = kOps[Below(sizeof(kOps) / sizeof(kOps[0]))];
    const uint32_t size = (op == opc::kLb || op == opc::kLbu || op == opc::kSb) ? 1
                          : (op == opc::kLh || op == opc::kLhu || op == opc::kSh) ? 2
                                                                                    : 4;
    int32_t offset = (static_cast<int32_t>(Below(64)) - 32) * static_cast<int32_t>(size);
    if (Chance(5)) offset += static_cast<int32_t>(Below(4));  // maybe misaligned
    return I(op, BaseReg(), op >= opc::kSb && op != opc::kLl ? AnyReg() : DestReg(), offset);
  }
  uint32_t BranchInsn() {
    const int32_t off = static_cast<int32_t>(Below(25)) - 12;
    switch (Below(16)) {
      case 0: return Beq(AnyReg(), AnyReg(), off);
      case 1: return Bne(AnyReg(), AnyReg(), off);
      case 2: return Blez(AnyReg(), off);
      case 3: return Bgtz(AnyReg(), off);
      case 4: return Beql(AnyReg(), AnyReg(), off);
      case 5: return Bnel(AnyReg(), AnyReg(), off);
      case 6: return I(opc::kBlezl, AnyReg(), 0, off);
      case 7: return I(opc::kBgtzl, AnyReg(), 0, off);
      case 8: return Bltz(AnyReg(), off);
      case 9: return Bgez(AnyReg(), off);
      case 10: return Bltzl(AnyReg(), off);
      case 11: return I(opc::kRegimm, AnyReg(), regimm::kBgezl, off);
      case 12: return I(opc::kRegimm, AnyReg(), regimm::kBltzal, off);
      case 13: return I(opc::kRegimm, AnyReg(), regimm::kBgezal, off);
      case 14: return I(opc::kRegimm, AnyReg(), regimm::kBltzall, off);
      default: return I(opc::kRegimm, AnyReg(), regimm::kBgezall, off);
    }
  }
  uint32_t Jump(uint32_t base) {
    const uint32_t target = base + 4 * Below(kCodeWords);
    switch (Below(7)) {
      case 6: return Jr(kVdso);  // its words are fetched (and counted) one by one
      case 0: return J(target);
      case 1: return Jal(target);
      case 2: return Jr(Chance(70) ? kJumpReg : (Chance(50) ? kRa : kVdso));
      case 3: return Jalr(DestReg(), Chance(70) ? kJumpReg : kRa);
      case 4: return Jalr(kRa, kRa);
      default: return Jr(kRa);
    }
  }
  uint32_t Special23() {
    switch (Below(12)) {
      case 0: return Mul(DestReg(), AnyReg(), AnyReg());
      case 1: return Madd(AnyReg(), AnyReg());
      case 2: return Maddu(AnyReg(), AnyReg());
      case 3: return Msub(AnyReg(), AnyReg());
      case 4: return Msubu(AnyReg(), AnyReg());
      case 5: return R(opc::kSpecial2, AnyReg(), 0, DestReg(), 0, special2::kClz);
      case 6: return R(opc::kSpecial2, AnyReg(), 0, DestReg(), 0, special2::kClo);
      case 7: return R(opc::kSpecial3, AnyReg(), DestReg(), Below(32), Below(32), special3::kExt);
      case 8: return R(opc::kSpecial3, AnyReg(), DestReg(), Below(32), Below(32), special3::kIns);
      case 9: {
        static constexpr uint32_t kShuffles[] = {bshfl::kWsbh, bshfl::kSeb, bshfl::kSeh, 0x11};
        return R(opc::kSpecial3, 0, AnyReg(), DestReg(), kShuffles[Below(4)], special3::kBshfl);
      }
      case 10: return Rdhwr(DestReg(), Chance(50) ? 29 : Below(4));
      default: return R(opc::kSpecial2, AnyReg(), AnyReg(), DestReg(), 0, Below(64));
    }
  }
  uint32_t Cop0() {
    switch (Below(14)) {
      case 0: return Mfc0(DestReg(), Below(18), Below(4));
      case 1: return Mfc0(DestReg(), kCp0Count);
      case 2: return Mtc0(AnyReg(), kCp0Compare);
      case 3: return Mtc0(AnyReg(), kCp0Count);
      case 4: return Mtc0(AnyReg(), kCp0EntryLo0);
      case 5: return Mtc0(AnyReg(), kCp0Index);
      case 6: return Tlbp();
      case 7: return Tlbr();
      case 8: return Di(DestReg());
      case 9: return Ei(DestReg());
      case 10: return Mtc0(AnyReg(), kCp0Cause);
      case 11: return Chance(20) ? Eret() : Mfc0(DestReg(), kCp0Status);
      case 12: return Chance(20) ? Wait() : Mfc0(DestReg(), kCp0Epc);
      default: return Chance(30) ? Tlbwr() : Mfc0(DestReg(), kCp0Random);
    }
  }
  uint32_t Other() {
    switch (Below(10)) {
      case 0: return Syscall();
      case 1: return Break();
      case 2: return Teq(AnyReg(), AnyReg());
      case 3: return Tne(AnyReg(), AnyReg());
      case 4: return Teqi(AnyReg(), static_cast<int32_t>(Below(4)));
      case 5: return Cache(Chance(50) ? 0x10 : Below(32), static_cast<int32_t>(Below(64)), BaseReg());
      case 6: return Synci(BaseReg(), 0);
      case 7: return I(opc::kPref, BaseReg(), Below(32), 0);
      case 8: return Ehb();
      default: return I(opc::kCop1, AnyReg(), AnyReg(), 0);
    }
  }

  std::mt19937_64 rng_;
};

// Skips the instruction an exception stopped at (EPC + 4; interrupts return to it),
// acknowledges every IPI and re-arms the timer 150 counts on.
constexpr uint32_t kHandler[] = {
    Mfc0(kK1, kCp0Count), Addiu(kK1, kK1, 150), Mtc0(kK1, kCp0Compare), Lui(kK0, 0xbf20),
    Addiu(kK1, kZero, -1), Sw(kK1, static_cast<int32_t>(kIpiAck), kK0), Mfc0(kK0, kCp0Cause),
    Andi(kK0, kK0, 0x7c), Beq(kK0, kZero, 4), Nop(), Mfc0(kK0, kCp0Epc), Addiu(kK0, kK0, 4),
    Mtc0(kK0, kCp0Epc), Eret(), Nop()};

struct Machine {
  std::vector<uint8_t> ram = std::vector<uint8_t>(kRamBytes);
  std::unique_ptr<MipsSystem> system;
  uint32_t mmio_reads = 0;
};

struct Program {
  int cores = 1;
  uint64_t quantum = 1000;
  bool user = false;
  bool interrupts = false;
  std::vector<uint8_t> image;  // RAM as loaded
  std::vector<uint32_t> registers;  // per core, r1..r31
  uint32_t compare = 0;
};

void Put(std::vector<uint8_t>& ram, uint32_t pa, uint32_t word) { std::memcpy(&ram[pa], &word, 4); }

Program MakeProgram(uint32_t seed) {
  Generator gen(seed);
  Program p;
  p.cores = 1 + static_cast<int>(gen.Below(3));
  p.quantum = gen.Chance(30) ? 1 + gen.Below(40) : 1 + gen.Below(1500);
  p.user = gen.Chance(40);
  p.interrupts = gen.Chance(50);
  p.compare = 100 + gen.Below(3000);
  p.image.assign(kRamBytes, 0);
  for (uint32_t vector : {0x000u, 0x180u, 0x200u}) {
    if (vector == 0x180) {
      for (uint32_t i = 0; i < sizeof(kHandler) / 4; ++i) Put(p.image, vector + 4 * i, kHandler[i]);
    } else {
      Put(p.image, vector, J(0x80000180));
      Put(p.image, vector + 4, Nop());
    }
  }
  const uint32_t base = p.user ? kUserBase + kCodePhys : 0x80000000u + kCodePhys;
  for (uint32_t i = 0; i < kCodeWords; ++i) {
    if (i + 3 <= kCodeWords && gen.Chance(1)) {
      // A load from the vdso page puts it in the soft TLB; the jump there must still
      // fetch (and count) its words one by one.
      for (uint32_t w : {Lw(kAt, 0, kVdso), Jr(kVdso), Nop()}) Put(p.image, kCodePhys + 4 * i++, w);
      --i;
      continue;
    }
    Put(p.image, kCodePhys + 4 * i, gen.Instruction(base, i));
  }
  for (uint32_t pa = kDataPhys; pa < kDataPhys + 0x3000; pa += 4) Put(p.image, pa, gen.Word());
  if (p.user) {
    // One TLB entry of two 64 KiB pages, kUserBase -> physical 0 (ASID 7), then an
    // eret into user mode at the program.
    const uint32_t status = kStatusCU0 | (2u << 3) | kStatusEXL |
                            (p.interrupts ? (kStatusIE | kCauseIP7 | kCauseIP2) : 0);
    const uint32_t prologue[] = {
        Lui(kT0, 0x0001), Ori(kT0, kT0, 0xe000), Mtc0(kT0, kCp0PageMask),
        Lui(kT0, kUserBase >> 16), Ori(kT0, kT0, 7), Mtc0(kT0, kCp0EntryHi),
        Ori(kT0, kZero, 0x1e), Mtc0(kT0, kCp0EntryLo0),
        Ori(kT0, kZero, ((0x10000 >> 12) << 6) | 0x1e), Mtc0(kT0, kCp0EntryLo1),
        Mtc0(kZero, kCp0Index), Tlbwi(),
        Lui(kT0, base >> 16), Ori(kT0, kT0, base & 0xffff), Mtc0(kT0, kCp0Epc),
        Lui(kT0, status >> 16), Ori(kT0, kT0, status & 0xffff), Mtc0(kT0, kCp0Status), Eret()};
    for (uint32_t i = 0; i < sizeof(prologue) / 4; ++i) {
      Put(p.image, kProloguePhys + 4 * i, prologue[i]);
    }
  }
  const uint32_t data = p.user ? kUserBase + kDataPhys : 0x80000000u + kDataPhys;
  for (int c = 0; c < p.cores; ++c) {
    for (uint32_t r = 1; r < 32; ++r) {
      uint32_t v = gen.Chance(50) ? gen.Below(16) : gen.Word();
      switch (r) {
        case kData: v = data + 0x100 * gen.Below(8); break;
        case kPageEdge: v = data + 0x1000 - 4 * gen.Below(8); break;
        case kData2: v = data + 0x2000; break;
        case kDevice: v = 0xa0000000u | kDeviceBase; break;
        case kCodeReg: v = base + 4 * gen.Below(kCodeWords - 64); break;
        case kIpi: v = 0xa0000000u | kIpiBase; break;
        case kVdso: v = 0xa0000000u | kVdsoAddress; break;
        case kJumpReg: v = base + 4 * gen.Below(kCodeWords); break;
        case kRa: v = base + 4 * gen.Below(kCodeWords); break;
        default: break;
      }
      p.registers.push_back(v);
    }
  }
  return p;
}

Machine Boot(const Program& p, bool block_engine) {
  Machine m;
  m.ram = p.image;
  m.system = *MipsSystem::Create(
      m.ram, p.cores, [](uint64_t pa) { return pa >= kDeviceBase && pa < kDeviceBase + 0x1000; },
      p.quantum, kVdsoAddress);
  for (int c = 0; c < p.cores; ++c) {
    MipsCore& core = m.system->core(c);
    core.set_block_engine(block_engine);
    core.Reset(p.user ? 0x80000000u + kProloguePhys : 0x80000000u + kCodePhys);
    for (uint32_t r = 1; r < 32; ++r) core.set_gpr(static_cast<int>(r), p.registers[c * 31 + r - 1]);
    core.WriteCp0(kCp0Compare, 0, p.compare + 37 * static_cast<uint32_t>(c));
    if (p.interrupts && !p.user) {
      core.WriteCp0(kCp0Status, 0, kStatusCU0 | kStatusIE | kCauseIP7 | kCauseIP2);
    }
  }
  // The host watches a task on some runs, as a phase does.
  if (p.user && (p.quantum & 1) != 0) m.system->WatchTask(7, 4004);
  return m;
}

std::string CoreState(const MipsCore& c) {
  std::string s = absl::StrFormat("pc %08x waiting %d ll %d hi %08x lo %08x\n", c.pc(), c.waiting(),
                                  c.ll_bit(), c.hi(), c.lo());
  for (int r = 0; r < 32; ++r) s += absl::StrFormat("r%d %08x ", r, c.gpr(r));
  s += "\ncp0";
  for (uint32_t reg = 0; reg < 32; ++reg) {
    for (uint32_t sel = 0; sel < 4; ++sel) s += absl::StrFormat(" %08x", c.ReadCp0(reg, sel));
  }
  for (uint32_t i = 0; i < kTlbEntries; ++i) {
    const TlbEntry& e = c.tlb().Read(i);
    s += absl::StrFormat(" tlb%u %x %x %x %x %d", i, e.page_mask, e.entry_hi, e.entry_lo[0],
                         e.entry_lo[1], e.global);
  }
  const CoreCounters& k = c.counters();
  s += absl::StrFormat(
      "\ninsns %d exc %d refill %d inval %d mod %d sys %d irq %d icache %d ipis %d buserr %d "
      "mmio %d vdso %d/%d watched %d timer %d\n",
      k.instructions, k.exceptions, k.tlb_refills, k.tlb_invalid, k.tlb_modified, k.syscalls,
      k.interrupts, k.icache_lines_flushed, k.ipis_sent, k.bus_errors, k.mmio_exits,
      k.vdso_fetches, k.vdso_writes, c.watched_user_instructions(), c.CyclesUntilTimer());
  const PendingMmio& mmio = c.pending_mmio();
  s += absl::StrFormat("mmio %d %d %d %x %u %08x", mmio.active, mmio.completed, mmio.is_write,
                       mmio.paddr, mmio.size,
                       uint32_t{mmio.data[0]} | uint32_t{mmio.data[1]} << 8 |
                           uint32_t{mmio.data[2]} << 16 | uint32_t{mmio.data[3]} << 24);
  return s;
}

// Runs `m` for one slice, answering an MMIO exit; what happened, as text.
std::string RunSlice(Machine& m, uint64_t slice) {
  const SystemEvent e = m.system->Run(slice);
  if (e.stop == SystemStop::kMmio) {
    PendingMmio& pending = m.system->core(e.core).mutable_pending_mmio();
    if (!pending.is_write) {
      const uint32_t v = 0x9e3779b9u * ++m.mmio_reads;
      std::memcpy(pending.data.data(), &v, 4);
    }
    m.system->core(e.core).CompleteMmio();
  }
  return absl::StrFormat("stop %d core %d", static_cast<int>(e.stop), e.core);
}

TEST(BlockEngineTest, RandomProgramsMatchTheReferenceInterpreterExactly) {
  constexpr uint32_t kPrograms = 1500;
  uint64_t engine_total = 0;
  for (uint32_t seed = 1; seed <= kPrograms; ++seed) {
    const Program p = MakeProgram(seed);
    Machine reference = Boot(p, /*block_engine=*/false);
    Machine engine = Boot(p, /*block_engine=*/true);
    std::mt19937 slices(seed);
    uint64_t budget = 30000;
    while (budget > 0) {
      const uint64_t slice = std::min<uint64_t>(budget, 1 + slices() % 3000);
      budget -= slice;
      const std::string ref_stop = RunSlice(reference, slice);
      const std::string engine_stop = RunSlice(engine, slice);
      ASSERT_EQ(ref_stop, engine_stop) << "program " << seed;
      for (int c = 0; c < p.cores; ++c) {
        ASSERT_EQ(CoreState(reference.system->core(c)), CoreState(engine.system->core(c)))
            << "program " << seed << " core " << c << " with " << budget << " steps left";
      }
      ASSERT_TRUE(reference.ram == engine.ram) << "program " << seed;
      if (ref_stop.starts_with("stop 2")) break;  // halted
    }
    engine_total += engine.system->Total().instructions;
  }
  // The programs do run (not one exception after another).
  EXPECT_GT(engine_total, uint64_t{kPrograms} * 5000);
}

// A store that rewrites an instruction the engine has decoded runs the new one at
// its next fetch, as the reference interpreter's fetch from RAM does.
TEST(BlockEngineTest, StoresToDecodedCodeAreSeenAtTheNextFetch) {
  for (bool engine : {false, true}) {
    std::vector<uint8_t> ram(kRamBytes);
    auto system = *MipsSystem::Create(ram, 1, nullptr);
    MipsCore& core = system->core(0);
    core.set_block_engine(engine);
    // A loop: t0 += 1 (patched to += 2 by the third pass) ten times.
    const uint32_t code[] = {
        Addiu(kT0, kT0, 1),                      // 0: the patched word
        Addiu(kT1, kT1, 1),                      // 1
        Addiu(kT3, kZero, 3), Bne(kT1, kT3, 3),  // 2, 3: on the third pass
        Nop(),                                   // 4
        Sw(kT2, 0, kT5),                         // 5: store t2 over word 0
        Nop(),                                   // 6
        Addiu(kT4, kT4, -1), Bne(kT4, kZero, -9), Nop(),  // 7-9: back to word 0
        Beq(kZero, kZero, -1), Nop()};
    for (uint32_t i = 0; i < sizeof(code) / 4; ++i) Put(ram, 0x1000 + 4 * i, code[i]);
    core.Reset(0x80001000);
    core.set_gpr(kT2, Addiu(kT0, kT0, 2));
    core.set_gpr(kT4, 10);
    core.set_gpr(kT5, 0x80001000);
    system->Run(200);
    // Passes 1-3 added 1 (the store comes after pass 3's add), 4-10 added 2.
    EXPECT_EQ(core.gpr(kT0), 3u + 7u * 2u) << (engine ? "engine" : "reference");
    EXPECT_EQ(core.counters().exceptions, 0u);
  }
}

}  // namespace
}  // namespace sigvisor::mips
