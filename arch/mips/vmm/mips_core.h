// One emulated MIPS32r2 little-endian core: general registers, HI/LO, CP0, its own
// TLB, and the interpreter loop. Cores share RAM (a host span) and reach everything
// else through a PhysicalBus. Nothing the guest does — any instruction word, any CP0
// or TLB contents — can make the interpreter touch host memory outside that span:
// every RAM access is checked against its size, and every other physical address
// goes to the bus.
//
// The machine may also have one read-only page outside RAM, its vdso page
// (vdso_page.h), shared by every core: loads and fetches read its host bytes, a store
// to it faults and never changes it, and fetches from it are counted per signal
// (CoreCounters::vdso_fetches).
//
// An access to a host device stops the core before the instruction takes effect
// (StopReason::kMmio, pending_mmio() describes it); the VMM completes it (a read's
// bytes into pending_mmio().data) and calls CompleteMmio(); the next Run re-executes
// the instruction, which then consumes the completed access. This is how KVM's
// MMIO exits work, and it needs no special case for a load in a delay slot.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_CORE_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_CORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "arch/mips/vmm/core_counters.h"
#include "arch/mips/vmm/cp0.h"
#include "arch/mips/vmm/physical_bus.h"
#include "arch/mips/vmm/predecode.h"
#include "arch/mips/vmm/tlb.h"

namespace sigvisor::mips {

enum class StopReason {
  kBudget,   // ran the instructions it was given
  kMmio,     // an access for the host's devices: see pending_mmio()
  kWaiting,  // executed `wait` (or is still waiting): idle until an interrupt
  kYield,    // gave up the rest of its quantum (it sent an IPI)
};

struct PendingMmio {
  bool active = false;     // an exit is outstanding or completed
  bool completed = false;  // the VMM has handled it; the instruction may consume it
  bool is_write = false;
  uint64_t paddr = 0;
  uint32_t size = 0;
  std::array<uint8_t, 4> data{};  // little-endian, as the guest's bus carries it
};

class MipsCore {
 public:
  // `number` is the core's CPUNum (EBase 9:0); `ram` must outlive the core.
  MipsCore(int number, std::span<uint8_t> ram, PhysicalBus& bus);

  // The contract's reset state, starting at `entry` in kernel mode.
  void Reset(uint32_t entry);

  // Maps the machine's vdso page at guest-physical `paddr` (page-aligned, outside RAM
  // and away from every device). `host` (VdsoPage::kBytes) is shared with the other
  // cores and must outlive this one; the core only ever reads it.
  void MapVdso(uint64_t paddr, uint8_t* host);
  // The host page behind the vdso's physical address, null when there is none.
  const uint8_t* vdso_host() const { return vdso_host_; }

  // Executes up to `budget` instructions (faulting ones included, so an exception
  // loop still returns); `steps` says how many it went through.
  StopReason Run(uint64_t budget, uint64_t& steps);

  // Whether Run may use the block engine (mips_core_blocks.cc; on by default). Off,
  // every instruction goes through the reference interpreter, one at a time: what
  // the engine is checked against (the results must be bit-identical).
  void set_block_engine(bool on) { block_engine_ = on; }

  // The VMM has handled pending_mmio(); the next Run consumes it.
  void CompleteMmio() { mmio_.completed = true; }
  const PendingMmio& pending_mmio() const { return mmio_; }
  PendingMmio& mutable_pending_mmio() { return mmio_; }

  // Hardware interrupt lines (Cause.IP2..IP7 bits, e.g. kCauseIP2), level-triggered.
  void SetInterruptLine(uint32_t cause_bit, bool raised);
  // In `wait`; cleared by Run when an interrupt can be taken.
  bool waiting() const { return waiting_; }
  // An interrupt is pending and enabled: `wait` ends and the core takes it.
  bool InterruptTakeable() const;
  // Lets `cycles` cycles pass without an instruction (a waiting core's share of a
  // round, or the cost model's charge for an event): Count runs on them.
  void Idle(uint64_t cycles);
  // Cycles until the timer raises IP7 (Count reaches Compare).
  uint64_t CyclesUntilTimer() const { return timer_at_ > ticks_ ? timer_at_ - ticks_ : 0; }
  // Would the timer interrupt wake this core out of `wait`?
  bool TimerCanWake() const;
  // Clears the LL bit: another core may store to the linked word while this one is
  // switched out (sc then fails and the guest retries, as after an eret).
  void BreakLink() { ll_bit_ = false; }
  // Ends the current Run after the instruction in progress (kYield).
  void RequestYield() { yield_ = true; }

  // While set, the core counts the user-mode instructions it retires under ASID
  // `asid` (a task's address space: watched_user_instructions()), and tells the bus of
  // each `syscall` there with v0 == `syscall` (PhysicalBus::OnWatchedSyscall) before it
  // is taken: what the VMM needs to find a phase's operations (mips_machine.cc).
  // Setting a watch starts the count from 0.
  struct TaskWatch {
    uint32_t asid = 0;
    std::optional<uint32_t> syscall;
  };
  void WatchTask(std::optional<TaskWatch> watch) {
    task_watch_ = watch;
    watched_user_instructions_ = 0;
  }
  uint64_t watched_user_instructions() const { return watched_user_instructions_; }

  int number() const { return number_; }
  uint32_t pc() const { return pc_; }
  void set_pc(uint32_t pc) {
    pc_ = pc;
    npc_ = pc + 4;
    delay_slot_ = false;
  }
  uint32_t gpr(int i) const { return (i & 31) == 0 ? 0 : gpr_[i & 31]; }
  void set_gpr(int i, uint32_t v) {
    if ((i & 31) != 0) gpr_[i & 31] = v;
  }
  uint32_t hi() const { return hi_; }
  uint32_t lo() const { return lo_; }
  bool user_mode() const;
  uint32_t status() const { return status_; }
  uint32_t cause() const { return cause_; }
  uint32_t epc() const { return epc_; }
  uint32_t bad_vaddr() const { return bad_vaddr_; }
  uint32_t entry_hi() const { return entry_hi_; }
  uint32_t context() const { return context_; }
  uint32_t count() const;
  bool ll_bit() const { return ll_bit_; }
  const Tlb& tlb() const { return tlb_; }
  // CP0 as mfc0/mtc0 see it (for tests and the VMM's set-up).
  uint32_t ReadCp0(uint32_t reg, uint32_t sel) const;
  void WriteCp0(uint32_t reg, uint32_t sel, uint32_t value);

  const CoreCounters& counters() const { return counters_; }
  CoreCounters& mutable_counters() { return counters_; }

  // "pc 80100010 ra ... sp ... status ... cause ... epc ..." on one line.
  std::string DumpRegisters() const;

 private:
  enum class Access { kFetch, kLoad, kStore };
  // A 4 KiB virtual page whose RAM is known, so that repeated accesses skip the
  // translation. Tagged with the translation context (mode, ERL, ASID), so that a
  // change of context needs no flush; invalidated wholesale (generation bump) when
  // the TLB itself changes (tlbwi, tlbwr) or the machine is reset.
  struct SoftTlbEntry {
    // The context above the page's virtual base: one compare checks both (and an
    // access's alignment: the low bits are 0). 0 (generation 0) never matches.
    uint64_t tag = 0;
    uint8_t* host = nullptr;
  };
  static constexpr int kSoftTlbSize = 256;
  static constexpr uint64_t kVdsoPageMask = 0xfff;

  // The block engine: runs decoded blocks from pc_ (not a delay slot; a page of RAM
  // the soft TLB has, else it returns 0 at once) while they fit in `limit`
  // instructions; returns how many retired, with pc_, the counters, Count and the
  // timer as after that many reference steps. `watched`: the instructions count for
  // the watched task.
  uint64_t RunBlocks(uint64_t limit, bool watched);
  // Decodes the page of RAM at `host` (page-aligned) with the engine's labels.
  DecodedPage* DecodeNewPage(const uint8_t* host, const void* const* normal,
                             const void* const* slot);

  // Inlined into Run: the interpreter's one dispatch per instruction.
  [[gnu::always_inline]] inline void Execute(uint32_t insn);
  void ExecuteRegimm(uint32_t insn);
  void ExecuteSpecial2(uint32_t insn);
  void ExecuteSpecial3(uint32_t insn);
  void ExecuteCop0(uint32_t insn);
  void ExecuteCache(uint32_t insn, bool synci);
  void Branch(bool taken, uint32_t target);
  void BranchLikely(bool taken, uint32_t target);
  void TakeInterrupt();
  void RaiseException(ExcCode code, bool refill = false, uint32_t ce = 0);
  void RaiseAddressError(uint32_t vaddr, Access access);
  // Drops every soft-TLB entry (the TLB or the vdso mapping changed).
  void InvalidateTranslations();
  // The mode, ERL or ASID changed: entries are tagged with them (see .cc).
  void TranslationContextChanged();
  void RecomputeTimer();
  // Count has reached Compare: raise IP7 (Cause.TI).
  void FireTimer();
  uint64_t CountsElapsed() const;
  void UpdateRandom();

  // Translates, raising the guest's exception (and returning false) on failure.
  bool Translate(uint32_t vaddr, Access access, uint64_t& paddr);
  // The TLB exception for `vaddr` (refill, invalid or modified), with BadVAddr,
  // Context and EntryHi set as MIPS32r2 says, and its counter.
  void RaiseTlbException(uint32_t vaddr, Access access, TlbResult result);
  // A store to the vdso page: refused as a store to a read-only page is (see .cc).
  void RefuseVdsoStore(uint32_t vaddr);
  bool InVdso(uint64_t paddr) const {
    return vdso_host_ != nullptr && (paddr & ~uint64_t{kVdsoPageMask}) == vdso_paddr_;
  }
  // Counts an instruction fetch from the vdso page at host address `host`.
  void CountVdsoFetch(const uint8_t* host);
  bool Fetch(uint32_t vaddr, uint32_t& insn);
  // Host pointer to `size` bytes of RAM at `vaddr`, or null (then `paddr` is set, or
  // an exception has been raised when the return of `ok` is false).
  uint8_t* HostAddress(uint32_t vaddr, uint32_t size, Access access, uint64_t& paddr, bool& ok);
  // Load and Store take the soft TLB's hit inline; the rest is in the Slow halves.
  bool Load(uint32_t vaddr, uint32_t size, uint32_t& value);
  bool Store(uint32_t vaddr, uint32_t size, uint32_t value);
  bool LoadSlow(uint32_t vaddr, uint32_t size, uint32_t& value);
  bool StoreSlow(uint32_t vaddr, uint32_t size, uint32_t value);
  // The RAM word containing `vaddr` (lwl/lwr/swl/swr), or null with the guest's
  // exception raised.
  uint8_t* RamWord(uint32_t vaddr, Access access);
  // An access outside RAM: to the machine's devices, the host's, or a bus error.
  bool DeviceAccess(uint64_t paddr, uint32_t size, bool is_write, uint32_t& value);

  const int number_;
  uint8_t* const ram_;
  const uint64_t ram_size_;
  PhysicalBus& bus_;

  // The 32 general registers, and kSinkRegister, where the block engine's writes to
  // r0 go.
  std::array<uint32_t, 33> gpr_{};
  uint32_t hi_ = 0, lo_ = 0;
  uint32_t pc_ = 0;          // the instruction to execute next
  uint32_t npc_ = 4;         // the one after it (a branch target once a branch ran)
  bool delay_slot_ = false;  // pc_ is a branch's delay slot
  // The instruction being executed: where its exceptions point EPC.
  uint32_t cur_pc_ = 0;
  bool cur_in_delay_slot_ = false;
  bool fault_ = false;      // the current instruction raised an exception
  bool mmio_stop_ = false;  // the current instruction needs the host's device
  bool check_irq_ = true;   // something that affects interrupt delivery changed
  bool waiting_ = false;
  bool yield_ = false;
  bool ll_bit_ = false;

  // CP0.
  uint32_t index_ = 0, entry_lo0_ = 0, entry_lo1_ = 0, context_ = 0, page_mask_ = 0;
  uint32_t wired_ = 0, hwrena_ = 0, bad_vaddr_ = 0, entry_hi_ = 0, compare_ = 0;
  uint32_t status_ = 0, cause_ = 0, epc_ = 0, ebase_ = kResetEBase, config0_ = kConfig0;
  uint32_t error_epc_ = 0, user_local_ = 0, ll_addr_ = 0, random_ = kTlbEntries - 1;
  // Count = count_base_ + (ticks_ - count_base_ticks_) / kCyclesPerCount.
  // Cycles for Count: the cost model's modelled cycles plus idle time, so that a
  // guest timing itself with Count agrees with the modelled time.
  uint64_t ticks_ = 0;
  uint32_t count_base_ = 0;
  uint64_t count_base_ticks_ = 0;
  uint64_t timer_at_ = 0;  // the tick at which Count == Compare next

  Tlb tlb_;
  // A soft-TLB entry's tag holds the translation context it was made in above the
  // page: generation_ (bumped when the TLB changes), user mode, ERL and the ASID.
  static constexpr uint32_t kGenerations = 1u << 22;
  uint32_t generation_ = 1;
  uint64_t tag_generation_ = uint64_t{1} << 42;  // the current context << 32
  std::array<SoftTlbEntry, kSoftTlbSize> read_cache_{};
  std::array<SoftTlbEntry, kSoftTlbSize> write_cache_{};
  // The page instructions are being fetched from: its virtual base, or kNoFetchPage
  // (which no address masked with kFetchTagMask equals) since translations changed.
  static constexpr uint32_t kNoFetchPage = 0xffffffffu;
  uint32_t fetch_tag_ = kNoFetchPage;
  const uint8_t* fetch_host_ = nullptr;

  // The machine's vdso page (null: none), and the I-cache line of it this core
  // fetched from last, with the counters as they were then: the next fetch from the
  // same line continues that fetch when nothing but the instruction it fetched ran
  // in between (no exception, at most one instruction retired).
  uint8_t* vdso_host_ = nullptr;
  uint64_t vdso_paddr_ = 0;
  uint64_t vdso_line_ = UINT64_MAX;
  uint64_t vdso_line_instructions_ = 0;
  uint64_t vdso_line_exceptions_ = 0;

  // The block engine's decoded pages, by physical page of RAM (null: not decoded).
  bool block_engine_ = true;
  std::vector<std::unique_ptr<DecodedPage>> decoded_pages_;

  PendingMmio mmio_;
  CoreCounters counters_;
  std::optional<TaskWatch> task_watch_;
  uint64_t watched_user_instructions_ = 0;
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_CORE_H_
