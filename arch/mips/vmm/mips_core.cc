#include "arch/mips/vmm/mips_core.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/strings/str_format.h"
#include "arch/mips/vmm/cost_model.h"
#include "arch/mips/vmm/mips_opcodes.h"

namespace sigvisor::mips {
namespace {

constexpr uint32_t kPageShift = 12;
constexpr uint32_t kPageOffsetMask = 0xfff;
// A fetch address's page and its alignment bits: equal to fetch_tag_ (a page's base)
// only for an aligned address in that page.
constexpr uint32_t kFetchTagMask = ~kPageOffsetMask | 3u;
constexpr uint32_t kKseg0 = 0x80000000u;
constexpr uint32_t kKseg1 = 0xa0000000u;
constexpr uint32_t kKseg2 = 0xc0000000u;
constexpr uint32_t kIcacheHitInvalidate = 0x10;  // cache op: Hit_Invalidate_I

using namespace field;  // NOLINT: the instruction fields, by name

constexpr int32_t S(uint32_t v) { return static_cast<int32_t>(v); }
constexpr uint32_t SignExtend8(uint32_t v) { return static_cast<uint32_t>(static_cast<int8_t>(v)); }
constexpr uint32_t SignExtend16(uint32_t v) {
  return static_cast<uint32_t>(static_cast<int16_t>(v));
}

// The host is little-endian, as the guest. Fixed-size copies compile to one move.
inline uint32_t ReadLe(const uint8_t* p, uint32_t size) {
  switch (size) {
    case 1: return *p;
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    default: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
}
inline void WriteLe(uint8_t* p, uint32_t size, uint32_t v) {
  switch (size) {
    case 1: *p = static_cast<uint8_t>(v); return;
    case 2: {
      const uint16_t h = static_cast<uint16_t>(v);
      std::memcpy(p, &h, 2);
      return;
    }
    default: std::memcpy(p, &v, 4); return;
  }
}

}  // namespace

MipsCore::MipsCore(int number, std::span<uint8_t> ram, PhysicalBus& bus)
    : number_(number),
      ram_(ram.data()),
      ram_size_(ram.size()),
      bus_(bus),
      decoded_pages_(ram.size() >> kPageShift) {
  Reset(0xbfc00000u);
}

void MipsCore::Reset(uint32_t entry) {
  gpr_.fill(0);
  hi_ = lo_ = 0;
  set_pc(entry);
  status_ = kStatusCU0;  // kernel mode, BEV = 0, ERL = EXL = IE = 0 (the contract)
  cause_ = 0;
  ebase_ = kResetEBase | (static_cast<uint32_t>(number_) & 0x3ff);
  config0_ = kConfig0;
  wired_ = 0;
  ll_bit_ = false;
  waiting_ = false;
  mmio_ = {};
  count_base_ = 0;
  count_base_ticks_ = ticks_;
  compare_ = 0;
  RecomputeTimer();
  InvalidateTranslations();
  check_irq_ = true;
  vdso_line_ = UINT64_MAX;
}

void MipsCore::MapVdso(uint64_t paddr, uint8_t* host) {
  vdso_paddr_ = paddr & ~uint64_t{kVdsoPageMask};
  vdso_host_ = host;
  vdso_line_ = UINT64_MAX;
  InvalidateTranslations();  // the soft TLB may hold what used to be at that address
}

bool MipsCore::user_mode() const {
  return (status_ & (kStatusEXL | kStatusERL)) == 0 && (status_ & kStatusKsuMask) != 0;
}

uint64_t MipsCore::CountsElapsed() const {
  // The base may lie one tick ahead: an mtc0 Count takes effect as it retires.
  return ticks_ > count_base_ticks_ ? (ticks_ - count_base_ticks_) / kCyclesPerCount : 0;
}

uint32_t MipsCore::count() const { return count_base_ + static_cast<uint32_t>(CountsElapsed()); }

void MipsCore::RecomputeTimer() {
  // The first tick at which Count equals Compare; a full wrap (2^32 counts) when
  // they are equal now, since the match that just happened is not a new one.
  uint64_t delta = static_cast<uint32_t>(compare_ - count());
  if (delta == 0) delta = uint64_t{1} << 32;
  timer_at_ = count_base_ticks_ + kCyclesPerCount * (CountsElapsed() + delta);
}

void MipsCore::InvalidateTranslations() {
  if (++generation_ == kGenerations) {  // wrapped: old stamps could look current
    read_cache_.fill({});
    write_cache_.fill({});
    generation_ = 1;
  }
  TranslationContextChanged();
}

void MipsCore::TranslationContextChanged() {
  // What Translate's answer depends on besides the TLB: the mode (user addresses
  // only), ERL (kuseg unmapped) and the ASID. Entries made under another context stay
  // in the soft TLB and hit again when it comes back (the kernel's pages after each
  // return from user mode).
  const uint32_t context = (generation_ << 10) | (user_mode() ? 1u << 9 : 0u) |
                           ((status_ & kStatusERL) != 0 ? 1u << 8 : 0u) |
                           (entry_hi_ & kEntryHiAsidMask);
  tag_generation_ = uint64_t{context} << 32;
  fetch_tag_ = kNoFetchPage;  // the fetch page is by virtual address alone
}

void MipsCore::SetInterruptLine(uint32_t cause_bit, bool raised) {
  cause_ = raised ? (cause_ | cause_bit) : (cause_ & ~cause_bit);
  check_irq_ = true;
}

bool MipsCore::InterruptTakeable() const {
  if ((status_ & kStatusIE) == 0 || (status_ & (kStatusEXL | kStatusERL)) != 0) return false;
  return (cause_ & status_ & 0xff00u) != 0;
}

bool MipsCore::TimerCanWake() const {
  return (status_ & kStatusIE) != 0 && (status_ & (kStatusEXL | kStatusERL)) == 0 &&
         (status_ & kCauseIP7) != 0;  // IM7 is Status bit 15, as Cause.IP7
}

void MipsCore::FireTimer() {
  cause_ |= kCauseTI | kCauseIP7;
  // The next match is a full Count wrap away, unless Compare or Count is written.
  timer_at_ += kCyclesPerCount * (uint64_t{1} << 32);
  check_irq_ = true;
}

void MipsCore::Idle(uint64_t cycles) {
  while (cycles > 0) {
    if (timer_at_ <= ticks_) {  // cannot happen; never loop on it if it did
      FireTimer();
      continue;
    }
    const uint64_t step = std::min(cycles, timer_at_ - ticks_);
    ticks_ += step;
    cycles -= step;
    if (ticks_ == timer_at_) FireTimer();
  }
}

StopReason MipsCore::Run(uint64_t budget, uint64_t& steps) {
  steps = 0;
  // A completed MMIO access is consumed by re-executing its instruction before
  // anything else: an interrupt taken first would make the guest repeat the access.
  const bool resuming_mmio = mmio_.active && mmio_.completed;
  if (waiting_) {
    if (!InterruptTakeable()) return StopReason::kWaiting;
    waiting_ = false;
    check_irq_ = true;
  }
  // The VMM sets or clears a watch only between runs.
  const bool watching = task_watch_.has_value();
  // A local count, stored to `steps` on the way out: counting in the caller's
  // variable cost a store per instruction.
  uint64_t n = 0;
  for (; n < budget; ++n) {
    gpr_[0] = 0;
    if (check_irq_ && !(resuming_mmio && n == 0)) {
      check_irq_ = false;
      if (InterruptTakeable()) {
        TakeInterrupt();
        continue;
      }
    }
    // Whole blocks where they can run (not from a delay slot, not an MMIO access being
    // completed, from a page of RAM the soft TLB has); the reference step below where
    // they cannot.
    if (block_engine_ && !delay_slot_ && !mmio_.active) {
      const uint64_t limit = std::min(budget - n, CyclesUntilTimer());
      const bool watched_now = watching && (entry_hi_ & kEntryHiAsidMask) == task_watch_->asid &&
                               user_mode();
      const uint64_t retired = RunBlocks(limit, watched_now);
      // Wherever the engine stopped, the reference step is next (the engine would
      // stop there again), unless the budget is spent or the timer fired.
      n += retired;
      if (retired > 0 && (n == budget || check_irq_)) {
        --n;  // the loop's own step
        continue;
      }
    }
    cur_pc_ = pc_;
    cur_in_delay_slot_ = delay_slot_;
    uint32_t insn;
    // One compare checks both the page and the alignment (fetch_tag_'s low bits are 0).
    if ((cur_pc_ & kFetchTagMask) == fetch_tag_) {
      insn = ReadLe(fetch_host_ + (cur_pc_ & kPageOffsetMask), 4);  // the common case
    } else if (!Fetch(cur_pc_, insn)) {
      fault_ = false;
      continue;
    }
    const bool watched = watching && (entry_hi_ & kEntryHiAsidMask) == task_watch_->asid &&
                         user_mode();
    const uint32_t saved_npc = npc_;
    pc_ = npc_;
    npc_ += 4;
    delay_slot_ = false;
    Execute(insn);
    // One test on the common path for both ways an instruction does not retire.
    if (__builtin_expect(mmio_stop_ | fault_, false)) {
      if (mmio_stop_) {
        // Undo the step: the instruction runs again once the VMM has the answer.
        mmio_stop_ = false;
        pc_ = cur_pc_;
        npc_ = saved_npc;
        delay_slot_ = cur_in_delay_slot_;
        ++counters_.mmio_exits;
        steps = n;  // excludes the undone instruction
        return StopReason::kMmio;
      }
      fault_ = false;
      continue;
    }
    ++counters_.instructions;
    if (watched) ++watched_user_instructions_;
    if (++ticks_ == timer_at_) FireTimer();
    if (__builtin_expect(waiting_ | yield_, false)) {
      steps = n + 1;
      if (waiting_) return StopReason::kWaiting;
      yield_ = false;
      return StopReason::kYield;
    }
  }
  steps = n;
  return StopReason::kBudget;
}

void MipsCore::TakeInterrupt() {
  cur_pc_ = pc_;
  cur_in_delay_slot_ = delay_slot_;
  ++counters_.interrupts;
  RaiseException(ExcCode::kInterrupt);
  fault_ = false;
}

void MipsCore::RaiseException(ExcCode code, bool refill, uint32_t ce) {
  fault_ = true;
  ++counters_.exceptions;
  Idle(CostModel::kCyclesPerException);  // Count runs on modelled cycles
  if (code == ExcCode::kSyscall) ++counters_.syscalls;
  uint32_t offset = kVectorGeneral;
  if ((status_ & kStatusEXL) == 0) {
    epc_ = cur_in_delay_slot_ ? cur_pc_ - 4 : cur_pc_;
    cause_ = cur_in_delay_slot_ ? (cause_ | kCauseBD) : (cause_ & ~kCauseBD);
    if (refill) offset = kVectorRefill;
    if (code == ExcCode::kInterrupt && (cause_ & kCauseIV) != 0) offset = kVectorInterrupt;
  }
  cause_ = (cause_ & ~(kCauseExcCodeMask | (3u << kCauseCeShift))) |
           (static_cast<uint32_t>(code) << 2) | ((ce & 3) << kCauseCeShift);
  status_ |= kStatusEXL;
  const uint32_t base = (status_ & kStatusBEV) != 0 ? kBootExceptionBase : (ebase_ & 0xfffff000u);
  pc_ = base + offset;
  npc_ = pc_ + 4;
  delay_slot_ = false;
  TranslationContextChanged();  // now in kernel mode
}

void MipsCore::RaiseAddressError(uint32_t vaddr, Access access) {
  bad_vaddr_ = vaddr;
  RaiseException(access == Access::kStore ? ExcCode::kAddressStore : ExcCode::kAddressLoad);
}

bool MipsCore::Translate(uint32_t vaddr, Access access, uint64_t& paddr) {
  if (vaddr >= kKseg0) {
    if (user_mode()) {
      RaiseAddressError(vaddr, access);
      return false;
    }
    if (vaddr < kKseg1) {
      paddr = vaddr - kKseg0;
      return true;
    }
    if (vaddr < kKseg2) {
      paddr = vaddr - kKseg1;
      return true;
    }
  } else if ((status_ & kStatusERL) != 0) {
    paddr = vaddr;  // kuseg is unmapped while ERL is set
    return true;
  }
  const TlbTranslation t =
      tlb_.Lookup(vaddr, entry_hi_ & kEntryHiAsidMask, access == Access::kStore);
  if (t.result == TlbResult::kHit) {
    paddr = t.paddr;
    return true;
  }
  // A store to the vdso page through a clean (D = 0) entry, as the guest kernel maps
  // it: the guest's TLB Modified, and one of the writes the page refused.
  if (t.result == TlbResult::kModified && InVdso(t.paddr)) ++counters_.vdso_writes;
  RaiseTlbException(vaddr, access, t.result);
  return false;
}

void MipsCore::RaiseTlbException(uint32_t vaddr, Access access, TlbResult result) {
  bad_vaddr_ = vaddr;
  context_ = (context_ & 0xff800000u) | ((vaddr >> 9) & 0x007ffff0u);
  entry_hi_ = (vaddr & kEntryHiVpn2Mask) | (entry_hi_ & kEntryHiAsidMask);  // the same ASID
  const ExcCode miss = access == Access::kStore ? ExcCode::kTlbStore : ExcCode::kTlbLoad;
  switch (result) {
    case TlbResult::kRefill:
      ++counters_.tlb_refills;
      RaiseException(miss, /*refill=*/true);
      break;
    case TlbResult::kInvalid:
      ++counters_.tlb_invalid;
      RaiseException(miss);
      break;
    case TlbResult::kModified:
      ++counters_.tlb_modified;
      RaiseException(ExcCode::kTlbModified);
      break;
    case TlbResult::kHit: break;
  }
}

// The vdso page is read-only in guest-physical memory, whatever maps it: a store to
// it faults as a store to a read-only page does and changes nothing. Through the TLB
// that is TLB Modified, even where the guest's entry has D set (the guest cannot make
// the VMM's page writable); through kseg0/kseg1 (or kuseg under ERL), where no TLB
// entry is involved, it is a Data Bus Error, as a store to ROM on a real board. Either
// way it counts in vdso_writes (not bus_errors: something is there).
void MipsCore::RefuseVdsoStore(uint32_t vaddr) {
  ++counters_.vdso_writes;
  const bool mapped = vaddr >= kKseg2 || (vaddr < kKseg0 && (status_ & kStatusERL) == 0);
  if (mapped) {
    RaiseTlbException(vaddr, Access::kStore, TlbResult::kModified);
  } else {
    RaiseException(ExcCode::kDataBusError);
  }
}

void MipsCore::CountVdsoFetch(const uint8_t* host) {
  const uint64_t line = static_cast<uint64_t>(host - vdso_host_) / kICacheLineBytes;
  // The same line, and only the instruction fetched from it last (if anything) ran
  // since: the same fetch goes on. Anything else (an exception, a jump away and
  // back, another line) is a new one.
  const bool continues = line == vdso_line_ && counters_.exceptions == vdso_line_exceptions_ &&
                         counters_.instructions - vdso_line_instructions_ <= 1;
  if (!continues) ++counters_.vdso_fetches;
  vdso_line_ = line;
  vdso_line_instructions_ = counters_.instructions;
  vdso_line_exceptions_ = counters_.exceptions;
}

uint8_t* MipsCore::HostAddress(uint32_t vaddr, uint32_t size, Access access, uint64_t& paddr,
                               bool& ok) {
  ok = true;
  const uint32_t vpage = vaddr >> kPageShift;
  auto& cache = access == Access::kStore ? write_cache_ : read_cache_;
  SoftTlbEntry& e = cache[vpage % kSoftTlbSize];
  if (e.tag == (tag_generation_ | (vaddr & ~kPageOffsetMask))) {
    return e.host + (vaddr & kPageOffsetMask);
  }
  if (!Translate(vaddr, access, paddr)) {
    ok = false;
    return nullptr;
  }
  const uint64_t ppage = paddr & ~uint64_t{kPageOffsetMask};
  if (ppage < ram_size_ && ram_size_ - ppage >= (kPageOffsetMask + 1)) {
    e = {tag_generation_ | (vaddr & ~kPageOffsetMask), ram_ + ppage};
    return e.host + (vaddr & kPageOffsetMask);
  }
  if (paddr < ram_size_ && ram_size_ - paddr >= size) return ram_ + paddr;  // a partial page
  if (InVdso(paddr)) {
    if (access == Access::kStore) {
      RefuseVdsoStore(vaddr);
      ok = false;
      return nullptr;
    }
    // Loads and fetches read the one shared host page; only the read side of the soft
    // TLB ever points at it. (An access is aligned to its size, so it stays inside.)
    e = {tag_generation_ | (vaddr & ~kPageOffsetMask), vdso_host_};
    return vdso_host_ + (vaddr & kPageOffsetMask);
  }
  return nullptr;
}

bool MipsCore::Fetch(uint32_t vaddr, uint32_t& insn) {
  if ((vaddr & 3) != 0) {
    RaiseAddressError(vaddr, Access::kFetch);
    return false;
  }
  const uint32_t vpage = vaddr >> kPageShift;
  if ((vaddr & kFetchTagMask) == fetch_tag_) {
    insn = ReadLe(fetch_host_ + (vaddr & kPageOffsetMask), 4);
    return true;
  }
  uint64_t paddr = 0;
  bool ok;
  const uint8_t* host = HostAddress(vaddr, 4, Access::kFetch, paddr, ok);
  if (!ok) return false;
  if (host == nullptr) {
    // Code runs from RAM (and the vdso page) only: fetching from a device or from
    // nothing is a bus error.
    ++counters_.bus_errors;
    RaiseException(ExcCode::kInstructionBusError);
    return false;
  }
  if (vdso_host_ != nullptr && host >= vdso_host_ && host < vdso_host_ + kVdsoPageMask + 1) {
    // Never made the fetch page: every instruction from the vdso comes through here,
    // so that its fetches are counted (two per signal; the fast path is for RAM).
    CountVdsoFetch(host);
    insn = ReadLe(host, 4);
    return true;
  }
  const SoftTlbEntry& e = read_cache_[vpage % kSoftTlbSize];
  if (e.tag == (tag_generation_ | (vaddr & ~kPageOffsetMask))) {  // a whole page of RAM
    fetch_host_ = e.host;
    fetch_tag_ = vaddr & ~kPageOffsetMask;
  }
  insn = ReadLe(host, 4);
  return true;
}

uint8_t* MipsCore::RamWord(uint32_t vaddr, Access access) {
  uint64_t paddr = 0;
  bool ok;
  uint8_t* host = HostAddress(vaddr & ~3u, 4, access, paddr, ok);
  if (host == nullptr && ok) {
    // Partial-word accesses are for memory; a device gets a bus error.
    ++counters_.bus_errors;
    RaiseException(ExcCode::kDataBusError);
  }
  return host;
}

bool MipsCore::DeviceAccess(uint64_t paddr, uint32_t size, bool is_write, uint32_t& value) {
  if (mmio_.active) {
    if (mmio_.completed && mmio_.paddr == paddr && mmio_.size == size &&
        mmio_.is_write == is_write) {
      if (!is_write) value = ReadLe(mmio_.data.data(), size);
      mmio_ = {};
      return true;
    }
    mmio_ = {};  // not this instruction's: drop it (cannot happen with a sane VMM)
  }
  uint32_t v = is_write ? value : 0;
  switch (bus_.Access(number_, paddr, size, is_write, v)) {
    case PhysicalAccess::kDone:
      if (!is_write) value = v;
      return true;
    case PhysicalAccess::kExit:
      mmio_.active = true;
      mmio_.completed = false;
      mmio_.is_write = is_write;
      mmio_.paddr = paddr;
      mmio_.size = size;
      mmio_.data.fill(0);
      if (is_write) WriteLe(mmio_.data.data(), size, value);
      mmio_stop_ = true;
      return false;
    case PhysicalAccess::kBusError: break;
  }
  ++counters_.bus_errors;
  RaiseException(ExcCode::kDataBusError);
  return false;
}

inline bool MipsCore::Load(uint32_t vaddr, uint32_t size, uint32_t& value) {
  const SoftTlbEntry& e = read_cache_[(vaddr >> kPageShift) % kSoftTlbSize];
  // One compare: the generation, the page, and the alignment (the tag's low bits are 0).
  if (e.tag == (tag_generation_ | (vaddr & (~kPageOffsetMask | (size - 1))))) {
    value = ReadLe(e.host + (vaddr & kPageOffsetMask), size);
    return true;
  }
  return LoadSlow(vaddr, size, value);
}

bool MipsCore::LoadSlow(uint32_t vaddr, uint32_t size, uint32_t& value) {
  if ((vaddr & (size - 1)) != 0) {
    RaiseAddressError(vaddr, Access::kLoad);
    return false;
  }
  uint64_t paddr = 0;
  bool ok;
  if (uint8_t* host = HostAddress(vaddr, size, Access::kLoad, paddr, ok)) {
    value = ReadLe(host, size);
    return true;
  }
  if (!ok) return false;
  return DeviceAccess(paddr, size, /*is_write=*/false, value);
}

inline bool MipsCore::Store(uint32_t vaddr, uint32_t size, uint32_t value) {
  const SoftTlbEntry& e = write_cache_[(vaddr >> kPageShift) % kSoftTlbSize];
  // One compare: the generation, the page, and the alignment (the tag's low bits are 0).
  if (e.tag == (tag_generation_ | (vaddr & (~kPageOffsetMask | (size - 1))))) {
    WriteLe(e.host + (vaddr & kPageOffsetMask), size, value);
    return true;
  }
  return StoreSlow(vaddr, size, value);
}

bool MipsCore::StoreSlow(uint32_t vaddr, uint32_t size, uint32_t value) {
  if ((vaddr & (size - 1)) != 0) {
    RaiseAddressError(vaddr, Access::kStore);
    return false;
  }
  uint64_t paddr = 0;
  bool ok;
  if (uint8_t* host = HostAddress(vaddr, size, Access::kStore, paddr, ok)) {
    WriteLe(host, size, value);
    return true;
  }
  if (!ok) return false;
  return DeviceAccess(paddr, size, /*is_write=*/true, value);
}

void MipsCore::Branch(bool taken, uint32_t target) {
  // pc_ already is the delay slot; it runs either way.
  if (taken) npc_ = target;
  delay_slot_ = true;
}

void MipsCore::BranchLikely(bool taken, uint32_t target) {
  if (taken) {
    npc_ = target;
    delay_slot_ = true;
  } else {  // not taken: the delay slot is nullified
    pc_ = npc_;
    npc_ += 4;
  }
}

void MipsCore::Execute(uint32_t insn) {
  const uint32_t rs = Rs(insn), rt = Rt(insn);
  const uint32_t a = gpr_[rs], b = gpr_[rt];
  // The other fields (and a branch's target, a load's or store's address) are
  // computed where a case uses them, not before the dispatch: computed up front they
  // were spilled to the stack on every instruction.
  const auto branch_target = [&] { return pc_ + (SImm(insn) << 2); };  // pc_: the delay slot
  const auto vaddr = [&] { return a + SImm(insn); };
  uint32_t v = 0;
  auto trap_if = [&](bool cond) {
    if (cond) RaiseException(ExcCode::kTrap);
  };
  // One switch for every instruction, inlined into Run: SPECIAL's function field
  // extends the major opcode's 64 values (key 64 + funct), so the common ALU forms
  // take one indirect jump, not a second call and switch.
  const uint32_t key = Op(insn) == opc::kSpecial ? 64 + Funct(insn) : Op(insn);
  switch (key) {
    case 64 + special::kSll: gpr_[Rd(insn)] = b << Sa(insn); return;  // also nop, ssnop, ehb, pause
    case 64 + special::kMovci: return RaiseException(ExcCode::kCoprocessorUnusable, false, 1);  // movf/movt
    case 64 + special::kSrl:  // and rotr (rs bit 0)
      gpr_[Rd(insn)] = (rs & 1) != 0 ? std::rotr(b, static_cast<int>(Sa(insn))) : b >> Sa(insn);
      return;
    case 64 + special::kSra: gpr_[Rd(insn)] = static_cast<uint32_t>(S(b) >> Sa(insn)); return;
    case 64 + special::kSllv: gpr_[Rd(insn)] = b << (a & 31); return;
    case 64 + special::kSrlv:  // and rotrv (sa bit 0)
      gpr_[Rd(insn)] = (Sa(insn) & 1) != 0 ? std::rotr(b, static_cast<int>(a & 31)) : b >> (a & 31);
      return;
    case 64 + special::kSrav: gpr_[Rd(insn)] = static_cast<uint32_t>(S(b) >> (a & 31)); return;
    case 64 + special::kJr: return Branch(true, a);  // also jr.hb
    case 64 + special::kJalr:
      gpr_[Rd(insn)] = cur_pc_ + 8;
      return Branch(true, a);
    case 64 + special::kMovz:
      if (b == 0) gpr_[Rd(insn)] = a;
      return;
    case 64 + special::kMovn:
      if (b != 0) gpr_[Rd(insn)] = a;
      return;
    case 64 + special::kSyscall:
      if (task_watch_ && task_watch_->syscall == gpr_[2] &&
          (entry_hi_ & kEntryHiAsidMask) == task_watch_->asid && user_mode()) {
        bus_.OnWatchedSyscall(number_);
      }
      return RaiseException(ExcCode::kSyscall);
    case 64 + special::kBreak: return RaiseException(ExcCode::kBreakpoint);
    case 64 + special::kSync: return;  // sync: one memory order here
    case 64 + special::kMfhi: gpr_[Rd(insn)] = hi_; return;
    case 64 + special::kMthi: hi_ = a; return;
    case 64 + special::kMflo: gpr_[Rd(insn)] = lo_; return;
    case 64 + special::kMtlo: lo_ = a; return;
    case 64 + special::kMult: {
      const int64_t p = int64_t{S(a)} * int64_t{S(b)};
      lo_ = static_cast<uint32_t>(p);
      hi_ = static_cast<uint32_t>(static_cast<uint64_t>(p) >> 32);
      return;
    }
    case 64 + special::kMultu: {
      const uint64_t p = uint64_t{a} * uint64_t{b};
      lo_ = static_cast<uint32_t>(p);
      hi_ = static_cast<uint32_t>(p >> 32);
      return;
    }
    case 64 + special::kDiv:  // by zero the result is unpredictable; here HI/LO stay as they were
      if (b == 0) return;
      if (a == 0x80000000u && b == 0xffffffffu) {  // the one quotient that overflows
        lo_ = 0x80000000u;
        hi_ = 0;
        return;
      }
      lo_ = static_cast<uint32_t>(S(a) / S(b));
      hi_ = static_cast<uint32_t>(S(a) % S(b));
      return;
    case 64 + special::kDivu:
      if (b == 0) return;
      lo_ = a / b;
      hi_ = a % b;
      return;
    case 64 + special::kAdd: {
      int32_t r;
      if (__builtin_add_overflow(S(a), S(b), &r)) return RaiseException(ExcCode::kOverflow);
      gpr_[Rd(insn)] = static_cast<uint32_t>(r);
      return;
    }
    case 64 + special::kAddu: gpr_[Rd(insn)] = a + b; return;
    case 64 + special::kSub: {
      int32_t r;
      if (__builtin_sub_overflow(S(a), S(b), &r)) return RaiseException(ExcCode::kOverflow);
      gpr_[Rd(insn)] = static_cast<uint32_t>(r);
      return;
    }
    case 64 + special::kSubu: gpr_[Rd(insn)] = a - b; return;
    case 64 + special::kAnd: gpr_[Rd(insn)] = a & b; return;
    case 64 + special::kOr: gpr_[Rd(insn)] = a | b; return;
    case 64 + special::kXor: gpr_[Rd(insn)] = a ^ b; return;
    case 64 + special::kNor: gpr_[Rd(insn)] = ~(a | b); return;
    case 64 + special::kSlt: gpr_[Rd(insn)] = S(a) < S(b) ? 1 : 0; return;
    case 64 + special::kSltu: gpr_[Rd(insn)] = a < b ? 1 : 0; return;
    case 64 + special::kTge: return trap_if(S(a) >= S(b));
    case 64 + special::kTgeu: return trap_if(a >= b);
    case 64 + special::kTlt: return trap_if(S(a) < S(b));
    case 64 + special::kTltu: return trap_if(a < b);
    case 64 + special::kTeq: return trap_if(a == b);
    case 64 + special::kTne: return trap_if(a != b);
    case opc::kRegimm: return ExecuteRegimm(insn);
    case opc::kJ: return Branch(true, (pc_ & 0xf0000000u) | ((insn & 0x03ffffffu) << 2));
    case opc::kJal:
      gpr_[31] = cur_pc_ + 8;
      return Branch(true, (pc_ & 0xf0000000u) | ((insn & 0x03ffffffu) << 2));
    case opc::kBeq: return Branch(a == b, branch_target());
    case opc::kBne: return Branch(a != b, branch_target());
    case opc::kBlez: return Branch(S(a) <= 0, branch_target());
    case opc::kBgtz: return Branch(S(a) > 0, branch_target());
    case opc::kAddi: {
      int32_t r;
      if (__builtin_add_overflow(S(a), S(SImm(insn)), &r))
        return RaiseException(ExcCode::kOverflow);
      gpr_[rt] = static_cast<uint32_t>(r);
      return;
    }
    case opc::kAddiu: gpr_[rt] = a + SImm(insn); return;
    case opc::kSlti: gpr_[rt] = S(a) < S(SImm(insn)) ? 1 : 0; return;
    case opc::kSltiu: gpr_[rt] = a < SImm(insn) ? 1 : 0; return;
    case opc::kAndi: gpr_[rt] = a & Imm(insn); return;
    case opc::kOri: gpr_[rt] = a | Imm(insn); return;
    case opc::kXori: gpr_[rt] = a ^ Imm(insn); return;
    case opc::kLui: gpr_[rt] = Imm(insn) << 16; return;
    case opc::kCop0: return ExecuteCop0(insn);
    case opc::kCop1:  // there is no FPU
    case opc::kCop1x:
    case opc::kLwc1:
    case opc::kLdc1:
    case opc::kSwc1:
    case opc::kSdc1:
      return RaiseException(ExcCode::kCoprocessorUnusable, false, 1);
    case opc::kCop2:
    case opc::kLwc2:
    case opc::kLdc2:
    case opc::kSwc2:
    case opc::kSdc2:
      return RaiseException(ExcCode::kCoprocessorUnusable, false, 2);
    case opc::kBeql: return BranchLikely(a == b, branch_target());
    case opc::kBnel: return BranchLikely(a != b, branch_target());
    case opc::kBlezl: return BranchLikely(S(a) <= 0, branch_target());
    case opc::kBgtzl: return BranchLikely(S(a) > 0, branch_target());
    case opc::kSpecial2: return ExecuteSpecial2(insn);
    case opc::kSpecial3: return ExecuteSpecial3(insn);
    // Loads and stores.
    case opc::kLb:
      if (Load(vaddr(), 1, v)) gpr_[rt] = SignExtend8(v);
      return;
    case opc::kLh:
      if (Load(vaddr(), 2, v)) gpr_[rt] = SignExtend16(v);
      return;
    case opc::kLw:
      if (Load(vaddr(), 4, v)) gpr_[rt] = v;
      return;
    case opc::kLbu:
      if (Load(vaddr(), 1, v)) gpr_[rt] = v;
      return;
    case opc::kLhu:
      if (Load(vaddr(), 2, v)) gpr_[rt] = v;
      return;
    case opc::kLwl: {  // the word's low bytes up to vaddr() into rt's high bytes
      const uint8_t* word = RamWord(vaddr(), Access::kLoad);
      if (word == nullptr) return;
      const uint32_t shift = 8 * (3 - (vaddr() & 3));
      const uint32_t keep = shift == 0 ? 0 : (0xffffffffu >> (32 - shift));
      gpr_[rt] = (ReadLe(word, 4) << shift) | (b & keep);
      return;
    }
    case opc::kLwr: {  // the word's high bytes from vaddr() into rt's low bytes
      const uint8_t* word = RamWord(vaddr(), Access::kLoad);
      if (word == nullptr) return;
      const uint32_t shift = 8 * (vaddr() & 3);
      const uint32_t keep = shift == 0 ? 0 : ~(0xffffffffu >> shift);
      gpr_[rt] = (ReadLe(word, 4) >> shift) | (b & keep);
      return;
    }
    case opc::kSb: Store(vaddr(), 1, b); return;
    case opc::kSh: Store(vaddr(), 2, b); return;
    case opc::kSw: Store(vaddr(), 4, b); return;
    case opc::kSwl: {  // rt's high bytes into the word's low bytes up to vaddr()
      uint8_t* word = RamWord(vaddr(), Access::kStore);
      if (word == nullptr) return;
      const uint32_t shift = 8 * (3 - (vaddr() & 3));
      const uint32_t keep = shift == 0 ? 0 : ~(0xffffffffu >> shift);
      WriteLe(word, 4, (ReadLe(word, 4) & keep) | (b >> shift));
      return;
    }
    case opc::kSwr: {  // rt's low bytes into the word's high bytes from vaddr()
      uint8_t* word = RamWord(vaddr(), Access::kStore);
      if (word == nullptr) return;
      const uint32_t shift = 8 * (vaddr() & 3);
      const uint32_t keep = shift == 0 ? 0 : (0xffffffffu >> (32 - shift));
      WriteLe(word, 4, (ReadLe(word, 4) & keep) | (b << shift));
      return;
    }
    case opc::kLl:
      if (Load(vaddr(), 4, v)) {
        gpr_[rt] = v;
        ll_bit_ = true;
        ll_addr_ = vaddr();
      }
      return;
    case opc::kSc:
      if (!ll_bit_) {
        // Still an access: a bad address faults even when the store would not happen.
        if ((vaddr() & 3) != 0) return RaiseAddressError(vaddr(), Access::kStore);
        gpr_[rt] = 0;
        return;
      }
      if (Store(vaddr(), 4, b)) {
        gpr_[rt] = 1;
        ll_bit_ = false;
      }
      return;
    case opc::kCache: return ExecuteCache(insn, /*synci=*/false);
    case opc::kPref: return;  // a hint
    default: return RaiseException(ExcCode::kReservedInstruction);
  }
}

void MipsCore::ExecuteRegimm(uint32_t insn) {
  const uint32_t a = gpr_[Rs(insn)];
  const uint32_t target = pc_ + (SImm(insn) << 2);
  const uint32_t imm = SImm(insn);
  auto trap_if = [&](bool cond) {
    if (cond) RaiseException(ExcCode::kTrap);
  };
  switch (Rt(insn)) {
    case regimm::kBltz: return Branch(S(a) < 0, target);
    case regimm::kBgez: return Branch(S(a) >= 0, target);
    case regimm::kBltzl: return BranchLikely(S(a) < 0, target);
    case regimm::kBgezl: return BranchLikely(S(a) >= 0, target);
    case regimm::kTgei: return trap_if(S(a) >= S(imm));
    case regimm::kTgeiu: return trap_if(a >= imm);
    case regimm::kTlti: return trap_if(S(a) < S(imm));
    case regimm::kTltiu: return trap_if(a < imm);
    case regimm::kTeqi: return trap_if(a == imm);
    case regimm::kTnei: return trap_if(a != imm);
    case regimm::kBltzal:  // (ra is written whether or not it branches)
      gpr_[31] = cur_pc_ + 8;
      return Branch(S(a) < 0, target);
    case regimm::kBgezal:  // also bal
      gpr_[31] = cur_pc_ + 8;
      return Branch(S(a) >= 0, target);
    case regimm::kBltzall: gpr_[31] = cur_pc_ + 8; return BranchLikely(S(a) < 0, target);
    case regimm::kBgezall: gpr_[31] = cur_pc_ + 8; return BranchLikely(S(a) >= 0, target);
    case regimm::kSynci: return ExecuteCache(insn, /*synci=*/true);
    default: return RaiseException(ExcCode::kReservedInstruction);
  }
}

void MipsCore::ExecuteSpecial2(uint32_t insn) {
  const uint32_t rd = Rd(insn);
  const uint32_t a = gpr_[Rs(insn)], b = gpr_[Rt(insn)];
  const uint64_t acc = (uint64_t{hi_} << 32) | lo_;
  uint64_t r = 0;
  switch (Funct(insn)) {
    case special2::kMadd: r = acc + static_cast<uint64_t>(int64_t{S(a)} * int64_t{S(b)}); break;
    case special2::kMaddu: r = acc + uint64_t{a} * uint64_t{b}; break;
    case special2::kMsub: r = acc - static_cast<uint64_t>(int64_t{S(a)} * int64_t{S(b)}); break;
    case special2::kMsubu: r = acc - uint64_t{a} * uint64_t{b}; break;
    case special2::kMul: gpr_[rd] = static_cast<uint32_t>(int64_t{S(a)} * int64_t{S(b)}); return;
    case special2::kClz: gpr_[rd] = static_cast<uint32_t>(std::countl_zero(a)); return;
    case special2::kClo: gpr_[rd] = static_cast<uint32_t>(std::countl_one(a)); return;
    default: return RaiseException(ExcCode::kReservedInstruction);  // sdbbp and the rest
  }
  lo_ = static_cast<uint32_t>(r);
  hi_ = static_cast<uint32_t>(r >> 32);
}

void MipsCore::ExecuteSpecial3(uint32_t insn) {
  const uint32_t rt = Rt(insn), rd = Rd(insn), sa = Sa(insn);
  const uint32_t a = gpr_[Rs(insn)], b = gpr_[rt];
  switch (Funct(insn)) {
    case special3::kExt: {  // rd is msbd, sa is lsb
      const uint32_t size = rd + 1;
      if (sa + size > 32) return;  // unpredictable: leave rt alone
      const uint32_t mask = size == 32 ? 0xffffffffu : ((1u << size) - 1);
      gpr_[rt] = (a >> sa) & mask;
      return;
    }
    case special3::kIns: {  // rd is msb, sa is lsb
      if (rd < sa) return;  // unpredictable: leave rt alone
      const uint32_t size = rd - sa + 1;
      const uint32_t mask = (size == 32 ? 0xffffffffu : ((1u << size) - 1)) << sa;
      gpr_[rt] = (b & ~mask) | ((a << sa) & mask);
      return;
    }
    case special3::kBshfl:
      switch (sa) {
        case bshfl::kWsbh:
          gpr_[rd] = ((b & 0x00ff00ffu) << 8) | ((b >> 8) & 0x00ff00ffu);
          return;
        case bshfl::kSeb: gpr_[rd] = SignExtend8(b); return;
        case bshfl::kSeh: gpr_[rd] = SignExtend16(b); return;
        default: return RaiseException(ExcCode::kReservedInstruction);
      }
    case special3::kRdhwr: {
      if (user_mode() && (hwrena_ & (1u << rd)) == 0) {
        return RaiseException(ExcCode::kReservedInstruction);
      }
      switch (rd) {
        case kHwrCpuNum: gpr_[rt] = ebase_ & 0x3ff; return;
        case kHwrSynciStep: gpr_[rt] = kICacheLineBytes; return;
        case kHwrCc: gpr_[rt] = count(); return;
        case kHwrCcRes: gpr_[rt] = kCyclesPerCount; return;
        case kHwrUserLocal: gpr_[rt] = user_local_; return;
        default: return RaiseException(ExcCode::kReservedInstruction);
      }
    }
    default: return RaiseException(ExcCode::kReservedInstruction);
  }
}

void MipsCore::ExecuteCache(uint32_t insn, bool synci) {
  if (!synci && user_mode() && (status_ & kStatusCU0) == 0) {
    return RaiseException(ExcCode::kCoprocessorUnusable, false, 0);
  }
  const uint32_t vaddr = gpr_[Rs(insn)] + SImm(insn);
  const uint32_t op = Rt(insn);
  // Hit operations (and synci) name an address: it must translate, as on hardware.
  const bool hit_op = synci || (op >> 2) >= 4;
  if (hit_op) {
    uint64_t paddr;
    if (!Translate(vaddr, Access::kLoad, paddr)) return;
  }
  if (synci || op == kIcacheHitInvalidate) {
    ++counters_.icache_lines_flushed;
    Idle(CostModel::kCyclesPerFlushedLine);
  }
}

void MipsCore::ExecuteCop0(uint32_t insn) {
  if (user_mode() && (status_ & kStatusCU0) == 0) {
    return RaiseException(ExcCode::kCoprocessorUnusable, false, 0);
  }
  const uint32_t rs = Rs(insn), rt = Rt(insn), rd = Rd(insn);
  if (rs >= cop0::kCo) {  // the function field decides
    switch (Funct(insn)) {
      case cop0::kTlbr: {
        const TlbEntry& e = tlb_.Read(index_ & 31);
        page_mask_ = e.page_mask;
        entry_hi_ = e.entry_hi;
        entry_lo0_ = (e.entry_lo[0] & ~kEntryLoG) | (e.global ? kEntryLoG : 0);
        entry_lo1_ = (e.entry_lo[1] & ~kEntryLoG) | (e.global ? kEntryLoG : 0);
        TranslationContextChanged();  // the ASID may have changed
        return;
      }
      case cop0::kTlbwi:
        tlb_.Write(index_ & 31, page_mask_, entry_hi_, entry_lo0_, entry_lo1_);
        InvalidateTranslations();
        return;
      case cop0::kTlbwr:
        UpdateRandom();
        tlb_.Write(random_, page_mask_, entry_hi_, entry_lo0_, entry_lo1_);
        InvalidateTranslations();
        return;
      case cop0::kTlbp: {
        const std::optional<uint32_t> hit = tlb_.Probe(entry_hi_);
        index_ = hit ? *hit : (index_ | 0x80000000u);
        return;
      }
      case cop0::kEret:  // no delay slot
        if ((status_ & kStatusERL) != 0) {
          pc_ = error_epc_;
          status_ &= ~kStatusERL;
        } else {
          pc_ = epc_;
          status_ &= ~kStatusEXL;
        }
        npc_ = pc_ + 4;
        delay_slot_ = false;
        ll_bit_ = false;
        check_irq_ = true;
        TranslationContextChanged();
        return;
      case cop0::kWait:  // the core idles until an interrupt can be taken
        waiting_ = true;
        return;
      default: return RaiseException(ExcCode::kReservedInstruction);
    }
  }
  switch (rs) {
    case cop0::kMfc0: gpr_[rt] = ReadCp0(rd, insn & 7); return;
    case cop0::kMtc0: WriteCp0(rd, insn & 7, gpr_[rt]); return;
    case cop0::kRdpgpr: gpr_[rd] = gpr_[rt]; return;  // one shadow set, the current one
    case cop0::kWrpgpr: gpr_[rd] = gpr_[rt]; return;
    case cop0::kMfmc0:  // di / ei
      if (rd != kCp0Status || (insn & 0x7dfu) != 0) {
        return RaiseException(ExcCode::kReservedInstruction);
      }
      gpr_[rt] = status_;
      status_ = (insn & cop0::kMfmc0Ei) != 0 ? (status_ | kStatusIE) : (status_ & ~kStatusIE);
      check_irq_ = true;
      return;
    default: return RaiseException(ExcCode::kReservedInstruction);
  }
}

void MipsCore::UpdateRandom() {
  // Deterministic, decrementing with time between Wired and 31 as on hardware.
  const uint32_t wired = std::min<uint32_t>(wired_, kTlbEntries - 1);
  const uint32_t span = kTlbEntries - wired;
  random_ = kTlbEntries - 1 - static_cast<uint32_t>(ticks_ % span);
}

uint32_t MipsCore::ReadCp0(uint32_t reg, uint32_t sel) const {
  switch (reg * 8 + sel) {
    case kCp0Index * 8: return index_;
    case kCp0Random * 8: {
      const uint32_t wired = std::min<uint32_t>(wired_, kTlbEntries - 1);
      return kTlbEntries - 1 - static_cast<uint32_t>(ticks_ % (kTlbEntries - wired));
    }
    case kCp0EntryLo0 * 8: return entry_lo0_;
    case kCp0EntryLo1 * 8: return entry_lo1_;
    case kCp0Context * 8: return context_;
    case kCp0Context * 8 + 2: return user_local_;
    case kCp0PageMask * 8: return page_mask_;
    case kCp0Wired * 8: return wired_;
    case kCp0HwrEna * 8: return hwrena_;
    case kCp0BadVAddr * 8: return bad_vaddr_;
    case kCp0Count * 8: return count();
    case kCp0EntryHi * 8: return entry_hi_;
    case kCp0Compare * 8: return compare_;
    case kCp0Status * 8: return status_;
    case kCp0Cause * 8: return cause_;
    case kCp0Epc * 8: return epc_;
    case kCp0PrId * 8: return kPrId74Kf;
    case kCp0PrId * 8 + 1: return ebase_;
    case kCp0Config * 8: return config0_;
    case kCp0Config * 8 + 1: return kConfig1;
    case kCp0Config * 8 + 2: return kConfig2;
    case kCp0Config * 8 + 3: return kConfig3;
    case kCp0LlAddr * 8: return ll_addr_ >> 4;
    case kCp0ErrorEpc * 8: return error_epc_;
    default: return 0;  // unimplemented registers read as zero
  }
}

void MipsCore::WriteCp0(uint32_t reg, uint32_t sel, uint32_t v) {
  switch (reg * 8 + sel) {
    case kCp0Index * 8: index_ = (index_ & 0x80000000u) | (v & 31); return;
    case kCp0EntryLo0 * 8: entry_lo0_ = v & kEntryLoWritable; return;
    case kCp0EntryLo1 * 8: entry_lo1_ = v & kEntryLoWritable; return;
    case kCp0Context * 8: context_ = (context_ & 0x007fffffu) | (v & 0xff800000u); return;
    case kCp0Context * 8 + 2: user_local_ = v; return;
    case kCp0PageMask * 8: page_mask_ = v & kPageMaskWritable; return;
    case kCp0Wired * 8: wired_ = v & 31; return;
    case kCp0HwrEna * 8: hwrena_ = v & kHwrEnaWritable; return;
    case kCp0Count * 8:
      count_base_ = v;
      count_base_ticks_ = ticks_ + 1;  // counts from the next instruction on
      RecomputeTimer();
      return;
    case kCp0EntryHi * 8:
      entry_hi_ = v & (kEntryHiVpn2Mask | kEntryHiAsidMask);
      TranslationContextChanged();
      return;
    case kCp0Compare * 8:
      compare_ = v;
      cause_ &= ~(kCauseTI | kCauseIP7);  // writing Compare acknowledges the timer
      RecomputeTimer();
      check_irq_ = true;
      return;
    case kCp0Status * 8:
      status_ = (status_ & ~kStatusWritable) | (v & kStatusWritable);
      TranslationContextChanged();
      check_irq_ = true;
      return;
    case kCp0Cause * 8:
      cause_ = (cause_ & ~kCauseSoftwareWritable) | (v & kCauseSoftwareWritable);
      check_irq_ = true;
      return;
    case kCp0Epc * 8: epc_ = v; return;
    case kCp0PrId * 8 + 1: ebase_ = (ebase_ & ~kEBaseWritable) | (v & kEBaseWritable); return;
    case kCp0Config * 8: config0_ = (config0_ & ~kConfig0Writable) | (v & kConfig0Writable); return;
    case kCp0ErrorEpc * 8: error_epc_ = v; return;
    default: return;  // read-only or unimplemented: ignored
  }
}

std::string MipsCore::DumpRegisters() const {
  return absl::StrFormat(
      "core %d pc %08x v0 %08x v1 %08x a0 %08x a1 %08x a2 %08x a3 %08x t0 %08x s0 %08x "
      "gp %08x sp %08x fp %08x ra %08x hi %08x lo %08x status %08x cause %08x epc %08x "
      "badvaddr %08x entryhi %08x",
      number_, pc_, gpr_[2], gpr_[3], gpr_[4], gpr_[5], gpr_[6], gpr_[7], gpr_[8], gpr_[16],
      gpr_[28], gpr_[29], gpr_[30], gpr_[31], hi_, lo_, status_, cause_, epc_, bad_vaddr_,
      entry_hi_);
}

}  // namespace sigvisor::mips
