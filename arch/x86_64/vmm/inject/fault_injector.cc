#include "arch/x86_64/vmm/inject/fault_injector.h"

#include <linux/kvm.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/cpu/guest_debug.h"
#include "arch/x86_64/vmm/cpu/page_walk.h"
#include "arch/x86_64/vmm/trap/decoder.h"
#include "arch/x86_64/vmm/trap/emulator.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/abi/white_box.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kPtePresent = 1ull << 0;
constexpr uint64_t kPteWritable = 1ull << 1;
constexpr uint64_t kPageMask = ~uint64_t{0xfff};
constexpr uint64_t kUserTop = 0x0000800000000000ull;
constexpr uint64_t kRedZone = 128;  // the x86-64 ABI's: a signal frame goes below it
constexpr int kSigsegv = 11;
// The kernel function every system call passes through, with its pt_regs in rdi.
constexpr std::string_view kSyscallEntrySymbol = white_box::kSyscallDispatch;

// An injection made and not yet resolved: waiting for the guest's events.
struct OpenInjection {
  size_t record = 0;        // index into the output records
  int expected_signal = 0;  // the signal whose delivery or kill resolves it; 0: any (an
                            // exception: its fault raises the next signal the task takes)
  bool awaits_repair = false;  // an evicted page: the guest's repair resolves it
  uint64_t page = 0;
};

// What waits for the interrupt window (the guest's next return to user mode).
struct WindowAction {
  size_t record = 0;
  const InjectionSpec* spec = nullptr;
};

struct SpecState {
  const InjectionSpec* spec = nullptr;
  size_t index = 0;
  uint64_t breakpoint = 0;  // kAt: the resolved address
  uint64_t hits = 0;        // kAt: times reached
  uint64_t fired = 0;       // injections made
  std::set<uint64_t> ops;   // kOp/kRandom: the operations of the current phase that inject
  bool phase_done = false;  // kOp/kRandom: its phase has run (only the first one counts)
  std::string phase;        // kOp/kRandom: that phase, and its operations
  uint64_t phase_ops = 0;
};

class FaultInjector : public ExitInterceptor {
 public:
  FaultInjector(MachineContext& context, FaultInjectorOptions options,
                std::vector<InjectionRecord>* out, trap::Decoder decoder)
      : context_(context),
        options_(std::move(options)),
        out_(*out),
        decoder_(std::move(decoder)) {}

  absl::Status Prepare() {
    const SymbolTable& symbols = context_.image.symbols();
    for (size_t i = 0; i < options_.specs.size(); ++i) {
      SpecState state;
      state.spec = &options_.specs[i];
      state.index = i;
      const InjectionSpec& spec = *state.spec;
      if (!spec.phase.empty() && !ImageNamesPhase(spec.phase)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "--inject '%s': phase=%s: the image names no such phase (a phase is named by the "
            "string its guest gives phase_begin; the bundled kernel's are in docs/inject.md)",
            spec.text, spec.phase));
      }
      if (spec.when == InjectWhen::kAt) {
        if (spec.symbol.empty()) {
          state.breakpoint = spec.address;
        } else {
          std::optional<Symbol> symbol = symbols.Find(spec.symbol);
          if (!symbol) {
            return absl::InvalidArgumentError(absl::StrFormat(
                "--inject '%s': at=%s: no such symbol in the image (see `sigvisor sites` or nm)",
                spec.text, spec.symbol));
          }
          state.breakpoint = symbol->addr + spec.symbol_offset;
        }
      }
      specs_.push_back(state);
    }
    if (std::optional<Symbol> entry = symbols.Find(kSyscallEntrySymbol)) {
      syscall_entry_ = entry->addr;
    }
    for (const SpecState& state : specs_) {
      if ((state.spec->when == InjectWhen::kOp || state.spec->when == InjectWhen::kRandom) &&
          syscall_entry_ == 0) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "--inject '%s': counting operations needs the kernel symbol %s, which this image "
            "lacks; use at= or exit= instead",
            state.spec->text, kSyscallEntrySymbol));
      }
    }
    return context_.hypercalls.Register(SIGVISOR_HC_EVENT,
                                        [this](uint32_t gpa) { return OnEvent(gpa); });
  }

  absl::Status OnStart() override { return SyncBreakpoints(); }

  Interception Intercept(const VmExit& exit) override {
    if (lifted_ && !stepping_) {
      // A breakpoint lifted without a step (its instruction was made to fault): the
      // guest has left it by now, so it can go back.
      lifted_.reset();
      Report(SyncBreakpoints());
    }
    switch (exit.kind) {
      case ExitKind::kIrqWindowOpen: return OnWindow();
      case ExitKind::kDebug: return OnDebug(exit);
      default: return {};
    }
  }

  void Observe(const ObservedExit& exit) override {
    if (exit.instrument) return;
    ++exits_;
    for (SpecState& state : specs_) {
      const InjectionSpec& spec = *state.spec;
      if (spec.when != InjectWhen::kExit || state.fired >= spec.count) continue;
      if (exits_ == spec.exit_index + state.fired) Fire(state, 0);
    }
  }

  void OnPhaseMarker(const PhaseMarker& marker) override {
    if (!marker.begin) {
      if (!in_calibration_) EndPhase();
      in_calibration_ = false;
      return;
    }
    if (marker.calibration) {
      in_calibration_ = true;
      return;
    }
    phase_ = marker.name;
    phase_ops_ = marker.ops;
    phases_seen_.push_back({marker.name, marker.ops});
    op_ = 0;
    op_syscall_ = marker.op_syscall;
    for (SpecState& state : specs_) {
      const InjectionSpec& spec = *state.spec;
      if (spec.when != InjectWhen::kOp && spec.when != InjectWhen::kRandom) continue;
      if (state.phase_done || (!spec.phase.empty() && spec.phase != phase_)) continue;
      state.phase_done = true;
      state.phase = phase_;
      state.phase_ops = phase_ops_;
      state.ops = PlanOps(state);
    }
    counting_ops_ = op_syscall_.has_value() && AnyOpsPlanned();
    Report(SyncBreakpoints());
  }

  void OnEnd(const RunEnd& end) override {
    const bool guest_died = end.outcome != Outcome::kExited;
    for (const OpenInjection& open : open_) {
      InjectionRecord& record = out_[open.record];
      if (guest_died) {
        record.outcome = InjectionOutcome::kGuestPanic;
        record.detail = std::string(end.diagnosis);
      } else {
        record.outcome = InjectionOutcome::kNoEffect;
        if (record.detail.empty()) record.detail = "nothing followed before the guest exited";
      }
    }
    open_.clear();
    for (const WindowAction& action : window_) {
      out_[action.record].outcome = InjectionOutcome::kNoEffect;
      out_[action.record].detail = "the guest never returned to user mode";
    }
    window_.clear();
    // The injections whose trigger never came, one record each, and a warning per
    // spec saying why.
    for (SpecState& state : specs_) {
      const uint64_t missing = state.spec->count - state.fired;
      if (missing == 0) continue;
      const std::string why = WhyNeverCame(state);
      for (uint64_t op : state.ops) {
        InjectionRecord record = Planned(state);
        record.op = op;
        record.phase = state.phase;
        record.detail = absl::StrFormat("operation %d never came: %s", op, why);
        out_.push_back(std::move(record));
        ++state.fired;
      }
      state.ops.clear();
      while (state.fired < state.spec->count) {
        InjectionRecord record = Planned(state);
        record.detail = why;
        out_.push_back(std::move(record));
        ++state.fired;
      }
      warnings_.push_back(absl::StrFormat("--inject '%s': %d of %d injection%s never happened: %s",
                                          state.spec->text, missing, state.spec->count,
                                          state.spec->count == 1 ? "" : "s", why));
    }
  }

  std::vector<std::string> Warnings() override { return std::move(warnings_); }

 private:
  InjectionRecord Planned(const SpecState& state) {
    InjectionRecord record;
    record.spec = state.spec->text;
    record.sequence = ++sequence_;
    record.outcome = InjectionOutcome::kNotReached;
    return record;
  }

  // Whether the image holds `name` as a C string (or the tail of one: a linker may
  // merge it into a longer string that ends the same): a phase is named by such a
  // string in the guest program, so a name found nowhere is a typo.
  bool ImageNamesPhase(const std::string& name) const {
    std::string wanted = name;
    wanted.push_back('\0');
    const std::span<const uint8_t> bytes = context_.image.bytes();
    return std::search(bytes.begin(), bytes.end(), wanted.begin(), wanted.end()) != bytes.end();
  }

  // Why `state`'s remaining injections never came, for their records and a warning.
  std::string WhyNeverCame(const SpecState& state) const {
    const InjectionSpec& spec = *state.spec;
    switch (spec.when) {
      case InjectWhen::kAt:
        if (state.hits == 0) {
          return absl::StrFormat(
              "the guest never executed %s: its breakpoint never fired",
              spec.symbol.empty()
                  ? absl::StrFormat("%#x", state.breakpoint)
                  : absl::StrFormat("%s (%#x)", context_.image.symbols().Symbolize(state.breakpoint),
                                    state.breakpoint));
        }
        return absl::StrFormat("the guest executed %#x %d time%s, short of hit=%d and count=%d",
                               state.breakpoint, state.hits, state.hits == 1 ? "" : "s",
                               spec.hit, spec.count);
      case InjectWhen::kExit:
        return absl::StrFormat("the run took %d exit%s", exits_, exits_ == 1 ? "" : "s");
      case InjectWhen::kOp:
      case InjectWhen::kRandom: {
        std::vector<std::string> names;
        for (const auto& [name, ops] : phases_seen_) names.push_back(name);
        const std::string ran =
            names.empty() ? "no measured phase ran"
                          : absl::StrCat("this run's phases: ", absl::StrJoin(names, ", "));
        if (!state.phase_done) {
          return spec.phase.empty() ? ran
                                    : absl::StrFormat("no phase '%s' ran (%s)", spec.phase, ran);
        }
        return absl::StrFormat("phase '%s' had %d operation%s", state.phase, state.phase_ops,
                               state.phase_ops == 1 ? "" : "s");
      }
    }
    return "the trigger never came";
  }

  // The operations of this phase that inject: K.. for op=K, `count` drawn for random.
  std::set<uint64_t> PlanOps(const SpecState& state) const {
    const InjectionSpec& spec = *state.spec;
    std::set<uint64_t> ops;
    if (spec.when == InjectWhen::kOp) {
      for (uint64_t i = 0; i < spec.count; ++i) ops.insert(spec.op + i);
      return ops;
    }
    // random: distinct operations in [1, phase_ops_], the same for the same seed. The
    // engine is fully specified by the standard; the mapping to a range is ours.
    std::mt19937_64 engine(options_.seed * 0x9e3779b97f4a7c15ull + state.index);
    const uint64_t want = std::min<uint64_t>(spec.count, phase_ops_);
    while (ops.size() < want) ops.insert(engine() % phase_ops_ + 1);
    return ops;
  }

  bool AnyOpsPlanned() const {
    for (const SpecState& state : specs_) {
      if (!state.ops.empty()) return true;
    }
    return false;
  }

  void EndPhase() {
    counting_ops_ = false;
    phase_.clear();
    op_ = 0;
    Report(SyncBreakpoints());
  }

  // The breakpoints wanted now: every unfinished at= spec's, and the system-call
  // entry while operations are counted.
  std::set<uint64_t> WantedBreakpoints() const {
    std::set<uint64_t> wanted;
    for (const SpecState& state : specs_) {
      if (state.spec->when == InjectWhen::kAt && state.fired < state.spec->count) {
        wanted.insert(state.breakpoint);
      }
    }
    if (counting_ops_) wanted.insert(syscall_entry_);
    return wanted;
  }

  absl::Status SyncBreakpoints() {
    GuestDebug& debug = context_.cpu.debug();
    std::set<uint64_t> wanted = WantedBreakpoints();
    if (lifted_) wanted.erase(*lifted_);  // re-armed after its single step
    for (auto it = armed_.begin(); it != armed_.end();) {
      if (wanted.count(*it)) {
        ++it;
        continue;
      }
      if (absl::Status s = debug.RemoveBreakpoint(*it, GuestDebug::BreakKind::kExecute, 1);
          !s.ok()) {
        return s;
      }
      it = armed_.erase(it);
    }
    for (uint64_t address : wanted) {
      if (armed_.count(address)) continue;
      absl::StatusOr<int> slot = debug.AddBreakpoint(address, GuestDebug::BreakKind::kExecute, 1);
      if (!slot.ok()) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "fault injection needs a hardware breakpoint at %#x: %s", address,
            slot.status().message()));
      }
      armed_.insert(address);
    }
    return absl::OkStatus();
  }

  Interception OnDebug(const VmExit& exit) {
    GuestDebug& debug = context_.cpu.debug();
    const uint64_t dr6 = exit.raw_detail;
    if (lifted_ && stepping_ && debug.IsVmmStep(dr6)) {
      // The instruction under the lifted breakpoint has run: put it back.
      stepping_ = false;
      lifted_.reset();
      if (absl::Status s = debug.SetSingleStep(GuestDebug::kStepInjector, false); !s.ok()) {
        return HostError(s);
      }
      if (absl::Status s = SyncBreakpoints(); !s.ok()) return HostError(s);
      return Instrument("inject_step");
    }
    if (!debug.VmmBreakpointHit(dr6) || !armed_.count(exit.address)) return {};
    const uint64_t address = exit.address;
    faults_here_ = false;
    if (counting_ops_ && address == syscall_entry_) CountOp();
    for (SpecState& state : specs_) {
      const InjectionSpec& spec = *state.spec;
      if (spec.when != InjectWhen::kAt || state.breakpoint != address) continue;
      if (state.fired >= spec.count) continue;
      ++state.hits;
      if (state.hits >= spec.hit) Fire(state, op_);
    }
    // Step over the instruction with its breakpoint lifted (a hardware execution
    // breakpoint fires again on the same instruction otherwise). Not when the
    // injection makes that instruction fault: the CPU would push the step's TF with
    // the exception frame and the guest's iretq would take it as its own #DB. The
    // breakpoint then goes back at the next exit instead.
    if (absl::Status s = debug.RemoveBreakpoint(address, GuestDebug::BreakKind::kExecute, 1);
        !s.ok()) {
      return HostError(s);
    }
    armed_.erase(address);
    lifted_ = address;
    if (faults_here_) {
      stepping_ = false;
      return Instrument("inject_breakpoint");
    }
    stepping_ = true;
    if (absl::Status s = debug.SetSingleStep(GuestDebug::kStepInjector, true); !s.ok()) {
      return HostError(s);
    }
    return Instrument("inject_breakpoint");
  }

  // At syscall_dispatch(struct pt_regs *regs): the system call number is regs->rax.
  void CountOp() {
    absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
    absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
    if (!regs.ok() || !sregs.ok()) return;
    uint64_t nr = 0;
    if (!context_.cpu.ReadVirtual(sregs->cr3, regs->rdi + white_box::kPtRegsRax,
                                  {reinterpret_cast<uint8_t*>(&nr), sizeof(nr)})) {
      return;
    }
    if (!op_syscall_ || nr != *op_syscall_) return;
    ++op_;
    for (SpecState& state : specs_) {
      if (state.ops.erase(op_)) Fire(state, op_);
    }
    if (!AnyOpsPlanned()) {
      counting_ops_ = false;  // the breakpoint goes at the next sync
    }
  }

  // Makes one injection of `state`'s kind, now or at the next return to user mode.
  void Fire(SpecState& state, uint64_t op) {
    const InjectionSpec& spec = *state.spec;
    ++state.fired;
    InjectionRecord record;
    record.spec = spec.text;
    record.sequence = ++sequence_;
    record.phase = phase_;
    record.op = op;
    record.exit_index = exits_;
    NoteLocation(record);
    out_.push_back(std::move(record));
    const size_t index = out_.size() - 1;
    switch (spec.what) {
      case InjectWhat::kException:
        if (spec.mode == ExceptionMode::kKernel) faults_here_ = true;
        if (spec.mode == ExceptionMode::kKernel || out_[index].cpl == 3) {
          RaiseException(index, spec);
        } else {
          QueueForWindow(index, spec);
        }
        break;
      case InjectWhat::kSignal: QueueForWindow(index, spec); break;
      case InjectWhat::kPage:
        if (spec.page_target == PageTarget::kAccess) faults_here_ = true;
        EditPage(index, spec);
        break;
    }
  }

  void NoteLocation(InjectionRecord& record) {
    absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
    absl::StatusOr<int> cpl = context_.cpu.Cpl();
    if (regs.ok()) {
      record.rip = regs->rip;
      record.symbol = context_.image.symbols().Lookup(regs->rip) != nullptr
                          ? context_.image.symbols().Symbolize(regs->rip)
                          : "";
    }
    if (cpl.ok()) record.cpl = *cpl;
  }

  void QueueForWindow(size_t index, const InjectionSpec& spec) {
    window_.push_back({index, &spec});
    context_.cpu.vcpu().run()->request_interrupt_window = 1;
  }

  Interception OnWindow() {
    kvm_run* run = context_.cpu.vcpu().run();
    absl::StatusOr<int> cpl = context_.cpu.Cpl();
    if (!cpl.ok()) return HostError(cpl.status());
    if (window_.empty() || *cpl != 3 || !run->ready_for_interrupt_injection) {
      // Nothing to do, or not yet in user mode: keep waiting if something waits.
      run->request_interrupt_window = window_.empty() ? 0 : 1;
      return Instrument("inject_window");
    }
    const WindowAction action = window_.front();
    window_.pop_front();
    InjectionRecord& record = out_[action.record];
    NoteLocation(record);
    if (action.spec->what == InjectWhat::kException) {
      RaiseException(action.record, *action.spec);
    } else {
      SendHostSignal(action.record, *action.spec);
    }
    // One event per entry: a further action waits for the next window.
    run->request_interrupt_window = window_.empty() ? 0 : 1;
    return Instrument("inject_window");
  }

  void RaiseException(size_t index, const InjectionSpec& spec) {
    InjectionRecord& record = out_[index];
    record.action = absl::StrFormat("#%s%s in %s mode", absl::AsciiStrToUpper(ExceptionName(spec.vector)),
                                    spec.error_code ? absl::StrFormat("(%#x)", *spec.error_code) : "",
                                    record.cpl == 3 ? "user" : "kernel");
    constexpr uint8_t kPageFault = 14;
    const bool cr2_as_payload = spec.vector == kPageFault && context_.exception_payload;
    if (spec.vector == kPageFault) {
      record.address = spec.cr2.value_or(0);
      record.action += cr2_as_payload ? ", CR2 as the exception payload" : ", CR2 by SET_SREGS";
    }
    if (spec.vector == kPageFault && !cr2_as_payload) {
      absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
      if (!sregs.ok()) return Fail(index, sregs.status());
      sregs->cr2 = record.address;
      if (absl::Status s = context_.cpu.SetSregs(*sregs); !s.ok()) return Fail(index, s);
    }
    absl::StatusOr<kvm_vcpu_events> events = context_.cpu.vcpu().GetEvents();
    if (!events.ok()) return Fail(index, events.status());
    events->exception.nr = spec.vector;
    events->exception.has_error_code = spec.error_code.has_value();
    events->exception.error_code = spec.error_code.value_or(0);
    if (cr2_as_payload) {
      // Pending, not injected: KVM delivers it and writes CR2 from the payload then.
      events->exception.pending = 1;
      events->exception.injected = 0;
      events->exception_has_payload = 1;
      events->exception_payload = record.address;
      events->flags |= KVM_VCPUEVENT_VALID_PAYLOAD;
    } else {
      events->exception.injected = 1;
    }
    if (absl::Status s = context_.cpu.vcpu().SetEvents(*events); !s.ok()) return Fail(index, s);
    open_.push_back({.record = index});
  }

  void SendHostSignal(size_t index, const InjectionSpec& spec) {
    InjectionRecord& record = out_[index];
    record.action = absl::StrFormat("signal %d from the host to %s", spec.signo,
                                    spec.task ? absl::StrFormat("pid %d", spec.task)
                                              : std::string("the running task"));
    sigvisor_host_mailbox box = {};
    box.kind = SIGVISOR_HOST_REQUEST_SIGNAL;
    box.signo = spec.signo;
    box.pid = spec.task;
    box.seq = static_cast<uint32_t>(record.sequence);
    if (absl::Status s = context_.cpu.memory().WriteObject(SIGVISOR_HOST_MAILBOX_GPA, box);
        !s.ok()) {
      return Fail(index, s);
    }
    if (absl::Status s = context_.cpu.vcpu().Interrupt(SIGVISOR_HOST_REQUEST_VECTOR); !s.ok()) {
      return Fail(index, s);
    }
    record.signal = spec.signo;
    open_.push_back({.record = index, .expected_signal = spec.signo});
  }

  // The user address a page injection aims at.
  absl::StatusOr<uint64_t> PageTargetAddress(const InjectionSpec& spec, const kvm_regs& regs,
                                             const kvm_sregs& sregs) {
    switch (spec.page_target) {
      case PageTarget::kAddress: return spec.page_address;
      case PageTarget::kStack: {
        uint64_t user_rsp = regs.rsp;
        if ((sregs.cs.selector & 3) != 3) {
          // In the kernel: the user rsp is in the interrupt frame at the top of the
          // kernel stack (TSS.RSP0 - 16: ss at -8, rsp at -16).
          uint64_t rsp0 = 0;
          if (!context_.cpu.ReadVirtual(sregs.cr3, sregs.tr.base + 4,
                                        {reinterpret_cast<uint8_t*>(&rsp0), sizeof(rsp0)}) ||
              !context_.cpu.ReadVirtual(sregs.cr3, rsp0 - 16,
                                        {reinterpret_cast<uint8_t*>(&user_rsp), sizeof(user_rsp)})) {
            return absl::NotFoundError("cannot read the user stack pointer from the kernel stack");
          }
        }
        return user_rsp - kRedZone - 1;
      }
      case PageTarget::kAccess: {
        std::vector<uint8_t> bytes = context_.cpu.ReadVirtualUpTo(sregs.cr3, regs.rip, 15);
        std::optional<trap::MemoryOperand> mem = decoder_.MemoryOperandOf(bytes, regs.rip);
        if (!mem) {
          return absl::NotFoundError(
              absl::StrFormat("the instruction at %#x accesses no memory", regs.rip));
        }
        // RIP-relative from the instruction's end (this used to add the 15 bytes read).
        return trap::EffectiveAddress(*mem, regs);
      }
    }
    return absl::InternalError("unknown page target");
  }

  void EditPage(size_t index, const InjectionSpec& spec) {
    InjectionRecord& record = out_[index];
    absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
    absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
    if (!regs.ok()) return Fail(index, regs.status());
    if (!sregs.ok()) return Fail(index, sregs.status());
    absl::StatusOr<uint64_t> target = PageTargetAddress(spec, *regs, *sregs);
    if (!target.ok()) return NoEffect(index, std::string(target.status().message()));
    const uint64_t page = *target & kPageMask;
    record.address = page;
    const char* mode = spec.page_mode == PageMode::kNotPresent ? "not present"
                       : spec.page_mode == PageMode::kReadOnly ? "read-only"
                                                                : "evicted";
    record.action = absl::StrFormat("user page %#x made %s", page, mode);
    if (*target >= kUserTop) {
      return NoEffect(index, absl::StrFormat("%#x is not a user address", *target));
    }
    GuestMemory& memory = context_.cpu.memory();
    absl::StatusOr<uint64_t> pte_gpa = LeafEntryGpa(memory, sregs->cr3, page);
    if (!pte_gpa.ok()) return NoEffect(index, std::string(pte_gpa.status().message()));
    absl::StatusOr<uint64_t> pte = memory.ReadObject<uint64_t>(*pte_gpa);
    if (!pte.ok()) return Fail(index, pte.status());
    if (!(*pte & kPtePresent)) {
      return NoEffect(index, absl::StrFormat("the page %#x is not mapped", page));
    }
    uint64_t edited = *pte;
    switch (spec.page_mode) {
      case PageMode::kNotPresent: edited &= ~kPtePresent; break;
      case PageMode::kReadOnly: edited &= ~kPteWritable; break;
      case PageMode::kEvicted: edited = (edited & ~kPtePresent) | SIGVISOR_PTE_EVICTED; break;
    }
    if (absl::Status s = memory.WriteObject(*pte_gpa, edited); !s.ok()) return Fail(index, s);
    if (context_.flush_shadow_mmu) {
      if (absl::Status s = context_.flush_shadow_mmu(); !s.ok()) return Fail(index, s);
    }
    OpenInjection open{.record = index, .page = page};
    if (spec.page_mode == PageMode::kEvicted) {
      open.awaits_repair = true;
    } else {
      open.expected_signal = kSigsegv;
    }
    open_.push_back(open);
  }

  // A guest report (SIGVISOR_HC_EVENT, this injector's in the hypercall table):
  // resolves the open injection it concerns. The exit is the injector's instrument,
  // not the guest's work: it stays out of the exit ledger and of exit= counts.
  HypercallResult OnEvent(uint32_t gpa) {
    absl::StatusOr<sigvisor_hc_event> event =
        context_.cpu.memory().ReadObject<sigvisor_hc_event>(gpa);
    if (!event.ok()) {
      return HypercallResult::RunFailed(
          Outcome::kUnexpectedExit,
          absl::StrFormat("hypercall event: bad argument block at %#x: %s", gpa,
                          event.status().message()));
    }
    switch (event->kind) {
      case SIGVISOR_EVENT_SIGNAL_DELIVERED:
        ResolveBySignal(*event, InjectionOutcome::kDelivered,
                        absl::StrFormat("signal %d reached its handler in pid %d", event->signo,
                                        event->pid),
                        /*all=*/false);
        break;
      case SIGVISOR_EVENT_TASK_KILLED:
        ResolveBySignal(*event, InjectionOutcome::kTaskKilled,
                        absl::StrFormat("pid %d killed by signal %d", event->pid, event->signo),
                        /*all=*/true);
        break;
      case SIGVISOR_EVENT_PAGE_REPAIRED:
        Resolve([&](const OpenInjection& o) {
                  return o.awaits_repair && o.page == (event->addr & kPageMask);
                },
                InjectionOutcome::kRepaired,
                absl::StrFormat("the guest paged %#x back in (fault at rip %#x)",
                                event->addr & kPageMask, event->rip),
                /*all=*/false);
        break;
      case SIGVISOR_EVENT_HOST_SIGNAL:
        if (event->code < 0) {
          Resolve([&](const OpenInjection& o) { return o.expected_signal == event->signo; },
                  InjectionOutcome::kNoEffect,
                  absl::StrFormat("the guest refused the signal (error %d)", event->code),
                  /*all=*/false);
        }
        break;
      default: break;
    }
    if (host_error_) {
      return HypercallResult::RunFailed(Outcome::kHostError,
                                        absl::StrCat("fault injection: ", host_error_->message()));
    }
    HypercallResult mine;
    mine.instrument = true;
    return mine;
  }

  // A signal that reached a handler or killed a task resolves the oldest open
  // injection waiting for it (`all`: every one, as a killed task takes no more),
  // which records the signal and its si_addr.
  void ResolveBySignal(const sigvisor_hc_event& event, InjectionOutcome outcome,
                       const std::string& detail, bool all) {
    for (auto it = open_.begin(); it != open_.end();) {
      if (it->awaits_repair || (it->expected_signal != 0 && it->expected_signal != event.signo)) {
        ++it;
        continue;
      }
      InjectionRecord& record = out_[it->record];
      record.outcome = outcome;
      record.detail = detail;
      record.signal = event.signo;
      record.si_addr = event.addr;
      it = open_.erase(it);
      if (!all) return;
    }
  }

  template <typename Match>
  void Resolve(Match match, InjectionOutcome outcome, const std::string& detail, bool all) {
    for (auto it = open_.begin(); it != open_.end();) {
      if (!match(*it)) {
        ++it;
        continue;
      }
      InjectionRecord& record = out_[it->record];
      record.outcome = outcome;
      record.detail = detail;
      it = open_.erase(it);
      if (!all) return;
    }
  }

  void NoEffect(size_t index, std::string why) {
    out_[index].outcome = InjectionOutcome::kNoEffect;
    out_[index].detail = std::move(why);
  }

  void Fail(size_t index, const absl::Status& status) {
    NoEffect(index, absl::StrCat("the VMM could not inject: ", status.message()));
    Report(status);
  }

  void Report(const absl::Status& status) {
    if (!status.ok() && !host_error_) host_error_ = status;
  }

  // `detail`: a literal, which outlives the next Intercept() as an Interception's
  // words must (exit_interceptor.h).
  Interception Instrument(std::string_view detail) {
    if (host_error_) return HostError(*host_error_);
    return Interception::Instrument(detail);
  }

  static Interception HostError(const absl::Status& status) {
    return Interception::HostError("fault injection", status);
  }

  MachineContext& context_;
  FaultInjectorOptions options_;
  std::vector<InjectionRecord>& out_;
  trap::Decoder decoder_;
  std::vector<SpecState> specs_;
  uint64_t syscall_entry_ = 0;

  uint64_t exits_ = 0;
  uint64_t sequence_ = 0;
  std::string phase_;
  uint64_t phase_ops_ = 0;
  uint64_t op_ = 0;
  bool in_calibration_ = false;
  bool counting_ops_ = false;
  std::optional<uint64_t> op_syscall_;

  std::set<uint64_t> armed_;
  std::optional<uint64_t> lifted_;
  bool stepping_ = false;
  bool faults_here_ = false;  // an injection just made the breakpoint's instruction fault

  std::deque<WindowAction> window_;
  std::vector<OpenInjection> open_;
  std::optional<absl::Status> host_error_;
  std::vector<std::pair<std::string, uint64_t>> phases_seen_;  // measured: name, ops
  std::vector<std::string> warnings_;
};

}  // namespace

InterceptorFactory FaultInjectorFactory(FaultInjectorOptions options,
                                      std::vector<InjectionRecord>* out) {
  return [options = std::move(options),
          out](MachineContext& context) -> absl::StatusOr<std::unique_ptr<ExitInterceptor>> {
    absl::StatusOr<trap::Decoder> decoder = trap::Decoder::Create();
    if (!decoder.ok()) return decoder.status();
    auto injector = std::make_unique<FaultInjector>(context, options, out, *std::move(decoder));
    if (absl::Status s = injector->Prepare(); !s.ok()) return s;
    return injector;
  };
}

}  // namespace sigvisor::x86
