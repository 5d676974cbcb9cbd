#include "arch/x86_64/vmm/trace/step_tracer.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/idt_gates.h"

namespace sigvisor::x86 {
namespace {

constexpr size_t kMaxInsnBytes = 15;
constexpr int kVectorUd = 6;

// The vectors whose delivery pushes an error code.
bool HasErrorCode(int vector) {
  switch (vector) {
    case 8: case 10: case 11: case 12: case 13: case 14: case 17: case 21: case 29: case 30:
      return true;
    default: return false;
  }
}

std::string VectorName(int vector) {
  static const char* const kNames[] = {"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
                                       "#DF", "vector 9", "#TS", "#NP", "#SS", "#GP", "#PF",
                                       "vector 15", "#MF", "#AC", "#MC", "#XM", "#VE", "#CP"};
  if (vector >= 0 && vector < static_cast<int>(std::size(kNames))) return kNames[vector];
  return absl::StrFormat("vector %#x", vector);
}

// The Linux x86-64 system calls the bundled kernel has (guest-kit/uapi/syscalls.h).
std::string SyscallName(uint64_t nr) {
  switch (nr) {
    case 0: return "read";
    case 1: return "write";
    case 3: return "close";
    case 13: return "rt_sigaction";
    case 14: return "rt_sigprocmask";
    case 15: return "rt_sigreturn";
    case 22: return "pipe";
    case 24: return "sched_yield";
    case 34: return "pause";
    case 39: return "getpid";
    case 60: return "exit";
    case 61: return "wait4";
    case 62: return "kill";
    case 110: return "getppid";
    case 130: return "rt_sigsuspend";
    case 500: return "phase_begin";
    case 501: return "phase_end";
    case 502: return "spawn";
    case 503: return "set_debugreg";
    default: return absl::StrCat("syscall ", nr);
  }
}

std::string_view Mnemonic(std::string_view text) {
  const size_t space = text.find(' ');
  return space == std::string_view::npos ? text : text.substr(0, space);
}

}  // namespace

InterceptorFactory StepTracer::Factory(StepTracerOptions options, trace::Trace* out) {
  return [options = std::move(options),
          out](MachineContext& context) -> absl::StatusOr<std::unique_ptr<ExitInterceptor>> {
    absl::StatusOr<trap::Decoder> decoder = trap::Decoder::Create();
    if (!decoder.ok()) return decoder.status();
    context.cpu.RequestSync();
    return std::make_unique<StepTracer>(context, options, out, *std::move(decoder));
  };
}

StepTracer::StepTracer(MachineContext& context, StepTracerOptions options, trace::Trace* out,
                       trap::Decoder decoder)
    : context_(context),
      options_(std::move(options)),
      out_(out),
      decoder_(std::move(decoder)),
      inlines_(trace::InlineInfo::FromElf(context.image.bytes())),
      user_programs_(UserPrograms(context.image)) {}

const SymbolTable& StepTracer::KernelSymbols() const {
  return options_.kernel_symbols ? *options_.kernel_symbols : context_.image.symbols();
}

std::string StepTracer::Symbolize(uint64_t address) const {
  if (KernelSymbols().Lookup(address) != nullptr) return KernelSymbols().Symbolize(address);
  for (const ElfImage& program : user_programs_) {
    if (program.symbols().Lookup(address) != nullptr) return program.symbols().Symbolize(address);
  }
  return absl::StrFormat("%#x", address);
}

// The bundled kernel carries its user programs as ELF files between the symbols
// user_program_NAME_start and user_program_NAME_end: their symbols name user code.
std::vector<ElfImage> StepTracer::UserPrograms(const ElfImage& kernel) {
  std::vector<ElfImage> programs;
  for (const Symbol& start : kernel.symbols().symbols()) {
    if (!start.name.starts_with("user_program_") || !start.name.ends_with("_start")) continue;
    const std::string stem = start.name.substr(0, start.name.size() - 6);
    std::optional<Symbol> end = kernel.symbols().Find(stem + "_end");
    if (!end || end->addr <= start.addr) continue;
    for (const ElfSegment& segment : kernel.segments()) {
      if (start.addr < segment.vaddr || end->addr > segment.vaddr + segment.file_bytes.size()) {
        continue;
      }
      const auto bytes = segment.file_bytes.subspan(start.addr - segment.vaddr,
                                                    end->addr - start.addr);
      absl::StatusOr<ElfImage> program =
          ElfImage::Parse(std::vector<uint8_t>(bytes.begin(), bytes.end()));
      if (program.ok()) programs.push_back(*std::move(program));
      break;
    }
  }
  return programs;
}

Interception StepTracer::Intercept(const VmExit& exit) {
  if (exit.kind == ExitKind::kInternalError && tracing_ && entry_stops_) {
    absl::StatusOr<std::optional<int>> vector = entry_stops_->Take();
    if (!vector.ok()) {
      Stop(absl::StrCat("could not follow a kernel entry: ", vector.status().message()), false);
      return {};
    }
    if (!*vector) return {};
    // The guest is at the handler now; step it from there.
    user_unstepped_ = false;
    if (absl::Status s = context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, true);
        !s.ok()) {
      Stop(absl::StrCat("could not single-step a kernel entry: ", s.message()), false);
    }
    return Interception::Instrument("kernel entry stop (trace)");
  }
  if (exit.kind != ExitKind::kDebug || !tracing_) return {};
  if (!entry_breakpoints_.empty()) {
    const std::optional<int> slot = context_.cpu.debug().VmmBreakpointHit(exit.raw_detail);
    const std::optional<uint64_t> at =
        slot ? context_.cpu.debug().BreakpointAddress(*slot) : std::nullopt;
    if (at && std::find(entry_breakpoints_.begin(), entry_breakpoints_.end(), *at) !=
                  entry_breakpoints_.end()) {
      if (absl::Status s = StepFromKernelEntry(); !s.ok()) {
        Stop(absl::StrCat("could not single-step a kernel entry: ", s.message()), false);
      }
      return Interception::Instrument("kernel entry breakpoint (trace)");
    }
  }
  if (!context_.cpu.debug().IsVmmStep(exit.raw_detail)) return {};
  return Interception::Instrument("single step (trace)");
}

void StepTracer::Observe(const ObservedExit& observed) {
  if (!tracing_) return;
  const bool vmm_step =
      observed.instrument && (observed.exit.kind == ExitKind::kDebug ||
                              observed.exit.kind == ExitKind::kInternalError);
  if (vmm_step) ++out_->vmm_steps;
  if (!vmm_step && step_after_exit_) {
    step_after_exit_ = false;
    if (absl::Status s = context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, true);
        !s.ok()) {
      Stop(absl::StrCat("could not single-step again after a trap: ", s.message()), false);
      return;
    }
  }
  std::string note;
  if (!vmm_step) {
    const std::string detail = observed.detail();
    note = observed.trap != nullptr
               ? absl::StrFormat("trap: %s, emulated by the VMM (exit %s)", observed.trap->kind,
                                 std::string(ExitKindName(observed.exit.kind)))
               : absl::StrFormat("exit: %s%s", std::string(ExitKindName(observed.exit.kind)),
                                 detail.empty() ? "" : absl::StrCat(", ", detail));
  }
  OnStop(vmm_step, note);
  if (tracing_ && out_->vmm_steps >= options_.max_steps) {
    Stop(absl::StrFormat("stopped after %d steps (the tracer's limit)", options_.max_steps), false);
  }
}

void StepTracer::OnPhaseMarker(const PhaseMarker& marker) {
  if (done_) return;
  if (marker.begin) {
    if (tracing_ || marker.calibration) return;
    if (!options_.phase.empty() && marker.name != options_.phase) return;
    out_->phase = marker.name;
    out_->ops = marker.ops;
    Start();
    return;
  }
  if (tracing_) {
    // The END marker's `out` has run (its exit is this one), and KVM counted it. If
    // the host reported the exit with RIP still at the `out`, it is still pending
    // (with this exit noted on it): it belongs to the phase all the same.
    if (pending_ && !pending_->exit_notes.empty()) Commit(*std::move(pending_));
    EndInUserMode();
    pending_.reset();
    Stop("", true);
  }
}

void StepTracer::EndInUserMode() {
  if (!pending_ || !pending_->is_iret || pending_->iret_cpl != 3) return;
  absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
  absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
  if (!regs.ok() || !sregs.ok() || sregs->cs.dpl != 3) return;
  Pending ran = *std::move(pending_);
  pending_.reset();
  if (!ran.uncounted) {
    ran.entry.notes.push_back(absl::StrFormat(
        "to CPL3 at %s", ran.iret_rip ? Symbolize(*ran.iret_rip) : std::string("?")));
  }
  Commit(std::move(ran));
  Entered marker;
  marker.name = "the phase's END marker (port write)";
  marker.from_rip = regs->rip;
  marker.from_cpl = 3;
  PushOpaque(marker, /*first_unstepped=*/false);
}

void StepTracer::OnEnd(const RunEnd& end) {
  if (tracing_) Stop(absl::StrFormat("the run ended (%s) inside the phase", OutcomeName(end.outcome)), false);
}

void StepTracer::Start() {
  absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
  absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
  if (!regs.ok() || !sregs.ok()) {
    out_->stopped_why = "could not read the vCPU's registers at the phase's BEGIN";
    done_ = true;
    return;
  }
  // A phase that begins in user code (a Linux process's marker) on a host that steps
  // only CPL0 (PVM) must not be stepped yet: the step would set RFLAGS.TF on a user
  // instruction, and the guest would take its #DB. It waits for its first kernel entry
  // on execution breakpoints instead (ArmEntryBreakpoints), and steps from there.
  const bool await_kernel_entry = sregs->cs.dpl == 3 && context_.cpl0_emulated;
  if (!await_kernel_entry) {
    if (absl::Status s = context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, true);
        !s.ok()) {
      out_->stopped_why = absl::StrCat("could not single-step: ", s.message());
      done_ = true;
      return;
    }
  }
  // The phase alone: no timer or device interrupt lands in it while it is traced.
  if (absl::Status s = context_.cpu.debug().SetBlockInterrupts(GuestDebug::kBlockTracer, true); !s.ok()) {
    out_->stopped_why = absl::StrCat("could not block interrupts while tracing: ", s.message());
    (void)context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, false);
    done_ = true;
    return;
  }
  ReadIdt(*sregs);
  if (absl::StatusOr<uint64_t> lstar = context_.cpu.vcpu().GetMsr(kMsrLstar); lstar.ok()) {
    syscall_entry_ = *lstar;
  }
  if (!context_.cpl0_emulated) {
    absl::StatusOr<KernelEntryStops> stops = KernelEntryStops::Install(
        context_.cpu, *sregs, context_.cpu.memory().size(), context_.flush_shadow_mmu);
    if (!stops.ok()) {
      out_->stopped_why = absl::StrCat("cannot follow kernel entries on this host: ",
                                       stops.status().message());
      (void)context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, false);
      (void)context_.cpu.debug().SetBlockInterrupts(GuestDebug::kBlockTracer, false);
      done_ = true;
      return;
    }
    entry_stops_ = *std::move(stops);
  }
  tracing_ = true;
  ClearStack();
  if (await_kernel_entry) {
    if (absl::Status s = ArmEntryBreakpoints(); !s.ok()) {
      Stop(absl::StrCat("cannot wait for the phase's first kernel entry: ", s.message()), false);
      return;
    }
  }
  absl::StatusOr<Pending> first = Fetch(*regs, *sregs);
  if (!first.ok()) {
    Stop(std::string(first.status().message()), false);
    return;
  }
  // The BEGIN marker's exit: if KVM reports it with RIP still at the `out`, that
  // instruction completes on re-entry and belongs to the time before the phase.
  first->uncounted = first->entry.text.starts_with("out");
  if (first->entry.cpl == 3) {
    // A marker written from user code (a Linux process): what runs after it up to the
    // first kernel entry is user code, opaque as after any return to user mode. Not
    // an instruction of the trace: the host steps no user code.
    first->is_iret = true;
    first->iret_cpl = 3;
    first->iret_rip = user_entry_ =
        first->uncounted ? first->entry.address + first->length : first->entry.address;
    first->uncounted = true;
    stats_before_user_ = ReadEmulationStats();
    // PushOpaque takes the return to user mode off what the host emulated since
    // then; here no kernel instruction returned, so nothing is to be taken off.
    if (stats_before_user_ && stats_before_user_->first > 0) --stats_before_user_->first;
  }
  pending_ = *std::move(first);
}

void StepTracer::Stop(std::string why, bool complete) {
  tracing_ = false;
  done_ = true;
  out_->complete = complete;
  out_->stopped_why = std::move(why);
  pending_.reset();
  DisarmEntryBreakpoints();
  (void)context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, false);
  (void)context_.cpu.debug().SetBlockInterrupts(GuestDebug::kBlockTracer, false);
  if (entry_stops_) {
    if (absl::Status s = entry_stops_->Remove(); !s.ok() && out_->stopped_why.empty()) {
      out_->stopped_why = absl::StrCat("could not restore the guest's IDT: ", s.message());
    }
    entry_stops_.reset();
  }
}

absl::Status StepTracer::ArmEntryBreakpoints() {
  GuestDebug& debug = context_.cpu.debug();
  for (int vector : kUserEntryVectors) {
    const auto gate = std::find_if(idt_.begin(), idt_.end(),
                                   [&](const auto& entry) { return entry.second == vector; });
    if (gate == idt_.end()) continue;
    bool taken = false;  // another VMM breakpoint is there already (SYSCALL's completion)
    for (int slot = 0; slot < 4; ++slot)
      taken = taken || debug.BreakpointAddress(slot) == gate->first;
    if (taken) continue;
    if (!debug.AddBreakpoint(gate->first, GuestDebug::BreakKind::kExecute, 1).ok()) break;
    entry_breakpoints_.push_back(gate->first);
  }
  if (entry_breakpoints_.empty()) {
    return absl::ResourceExhaustedError("no debug register is free for a breakpoint on its gates");
  }
  return absl::OkStatus();
}

void StepTracer::DisarmEntryBreakpoints() {
  for (uint64_t address : entry_breakpoints_) {
    (void)context_.cpu.debug().RemoveBreakpoint(address, GuestDebug::BreakKind::kExecute, 1);
  }
  entry_breakpoints_.clear();
}

absl::Status StepTracer::StepFromKernelEntry() {
  DisarmEntryBreakpoints();
  return context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, true);
}

void StepTracer::ReadIdt(const kvm_sregs& sregs) {
  idt_.clear();
  for (const IdtGate& gate : ReadIdtGates(context_.cpu, sregs)) {
    idt_.emplace(gate.handler, gate.vector);
  }
}

std::optional<StepTracer::Entered> StepTracer::KernelEntry(const kvm_regs& regs,
                                                          const kvm_sregs& sregs,
                                                          uint64_t rsp_adjust) {
  if (syscall_entry_ != 0 && regs.rip == syscall_entry_ && rsp_adjust == 0) {
    // SYSCALL keeps the user's RSP and leaves the return address in RCX.
    Entered entered;
    entered.name = absl::StrFormat("syscall (%s)", SyscallName(regs.rax));
    entered.from_rip = regs.rcx >= 2 ? regs.rcx - 2 : 0;
    entered.from_cpl = 3;
    return entered;
  }
  auto it = idt_.find(regs.rip);
  if (it == idt_.end()) return std::nullopt;
  Entered entered;
  entered.vector = it->second;
  entered.name = VectorName(entered.vector);
  const uint64_t frame = regs.rsp + rsp_adjust + (HasErrorCode(entered.vector) ? 8 : 0);
  uint64_t rip_cs[2];
  if (context_.cpu.ReadVirtual(sregs.cr3, frame,
                               {reinterpret_cast<uint8_t*>(rip_cs), sizeof(rip_cs)})) {
    entered.from_rip = rip_cs[0];
    entered.from_cpl = static_cast<int>(rip_cs[1] & 3);
  }
  if (entered.vector == kVectorUd && entered.from_cpl == 3) {
    uint8_t bytes[2];
    if (context_.cpu.ReadVirtual(sregs.cr3, entered.from_rip, bytes) && bytes[0] == 0xcd &&
        bytes[1] == 0x80) {
      entered.name = absl::StrFormat("#UD: int $0x80 (%s)", SyscallName(regs.rax));
    }
  } else if (entered.vector == 0x80) {
    entered.name = absl::StrFormat("int $0x80 (%s)", SyscallName(regs.rax));
  }
  return entered;
}

absl::StatusOr<StepTracer::Pending> StepTracer::Fetch(const kvm_regs& regs,
                                                      const kvm_sregs& sregs) {
  Pending p;
  trace::Entry& e = p.entry;
  e.kind = trace::Entry::Kind::kInsn;
  e.address = regs.rip;
  e.cpl = sregs.cs.dpl;
  e.symbol = Symbolize(regs.rip);
  if (const Symbol* symbol = KernelSymbols().Lookup(regs.rip)) e.function = symbol->name;
  e.inlined = inlines_.InlinedAt(regs.rip);
  std::vector<uint8_t> bytes = context_.cpu.ReadVirtualUpTo(sregs.cr3, regs.rip, kMaxInsnBytes);
  const trap::TrapSite* site =
      context_.traps != nullptr ? context_.traps->sites().Find(regs.rip) : nullptr;
  if (site != nullptr) {  // patched: show the original instruction
    std::copy(site->bytes.begin(), site->bytes.end(), bytes.begin());
  }
  std::optional<trap::DecodedInsn> decoded = decoder_.Decode(bytes, regs.rip);
  if (!decoded) {
    e.text = "(undecodable)";
    e.bytes.assign(bytes.begin(), bytes.begin() + std::min<size_t>(bytes.size(), 1));
    p.length = 1;
    return p;
  }
  p.length = decoded->length;
  e.bytes.assign(bytes.begin(), bytes.begin() + decoded->length);
  e.text = decoded->text;
  if (decoded->trap && decoded->trap->op == trap::TrapOp::kMovToDr) {
    e.debug_register_write = true;
    e.debug_control_write = decoded->trap->dr == 7;
  }
  if (site != nullptr) {
    e.notes.push_back("trap site (patched to hlt)");
    p.trap_site = true;
  }
  const std::string_view mnemonic = Mnemonic(e.text);
  p.is_call = mnemonic.starts_with("call");
  p.is_ret = mnemonic == "ret" || mnemonic == "retq";
  p.is_iret = mnemonic.starts_with("iret");
  p.is_rep = mnemonic.starts_with("rep");
  p.rcx = regs.rcx;
  if (mnemonic.starts_with("sysret")) {  // to CPL3 at RCX
    p.is_iret = true;
    p.iret_rip = regs.rcx;
    p.iret_cpl = 3;
  } else if (p.is_iret) {
    uint64_t rip_cs[2];
    if (context_.cpu.ReadVirtual(sregs.cr3, regs.rsp,
                                 {reinterpret_cast<uint8_t*>(rip_cs), sizeof(rip_cs)})) {
      p.iret_rip = rip_cs[0];
      p.iret_cpl = static_cast<int>(rip_cs[1] & 3);
    }
  }
  return p;
}

void StepTracer::Commit(Pending p) {
  if (p.uncounted) return;
  trace::Entry& e = p.entry;
  e.callers = stack_;
  for (std::string& note : p.exit_notes) e.notes.push_back(std::move(note));
  if (p.is_call) {
    frames_.push_back(1 + e.inlined.size());
    stack_.push_back(e.function.empty() ? e.symbol : e.function);
    stack_.insert(stack_.end(), e.inlined.begin(), e.inlined.end());
  } else if (p.is_ret) {
    PopFrame();
  } else if (p.is_iret) {
    if (p.iret_cpl == 3) {
      ClearStack();
    } else {
      PopFrame();  // back from an exception taken in the kernel
    }
  }
  out_->entries.push_back(std::move(e));
}

bool StepTracer::IsBranch(const Pending& p) {
  const std::string_view mnemonic = Mnemonic(p.entry.text);
  return p.is_call || p.is_ret || p.is_iret || mnemonic.starts_with("j") ||
         mnemonic.starts_with("loop") || mnemonic.starts_with("sysret") ||
         mnemonic.starts_with("sysexit") || mnemonic == "syscall" || mnemonic.starts_with("int") ||
         mnemonic == "ud2";
}

// An instruction the host ran without stopping before it, supplied from the image.
StepTracer::Pending StepTracer::Unstepped(uint64_t address, const kvm_sregs& sregs,
                                          std::string why) {
  kvm_regs at = {};
  at.rip = address;
  absl::StatusOr<Pending> p = Fetch(at, sregs);
  Pending result = p.ok() ? *std::move(p) : Pending{};
  result.entry.address = address;
  result.entry.cpl = 0;
  result.entry.unstepped = true;
  result.entry.notes.push_back(std::move(why));
  return result;
}

void StepTracer::OnStop(bool vmm_step, std::string_view exit_note) {
  absl::StatusOr<kvm_regs> regs = context_.cpu.GetRegs();
  absl::StatusOr<kvm_sregs> sregs = context_.cpu.GetSregs();
  if (!regs.ok() || !sregs.ok()) {
    Stop("could not read the vCPU's registers", false);
    return;
  }
  const int cpl = sregs->cs.dpl;
  if (!entry_breakpoints_.empty()) {
    // Waiting for the first kernel entry: user code's exits are not the kernel's, and
    // any other stop in the kernel (an exit another interceptor took there: on PVM the
    // completion of a SYSCALL at its entry) is the entry.
    if (cpl == 3) return;
    if (absl::Status s = StepFromKernelEntry(); !s.ok()) {
      Stop(absl::StrCat("could not single-step a kernel entry: ", s.message()), false);
      return;
    }
  }
  if (entry_stops_ && cpl == 3) {
    // Back in user code on a host that would step it: let it run, as PVM does, until
    // a kernel-entry stop. The instruction that left the kernel stays pending.
    if (!user_unstepped_) {
      user_unstepped_ = true;
      if (absl::Status s = context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, false);
          !s.ok()) {
        Stop(absl::StrCat("could not stop single-stepping user code: ", s.message()), false);
      }
    }
    return;
  }
  std::optional<Pending> ran;
  if (pending_) {
    const bool same = regs->rip == pending_->entry.address && cpl == pending_->entry.cpl;
    if (same && pending_->is_rep && vmm_step) {
      // The host ran the same instruction once more: PVM's emulator in two passes,
      // RFLAGS.TF once per iteration. Both count as an emulating host counts it (two
      // passes for a string that moved anything), so the host kinds compare.
      pending_->entry.passes = std::min<uint32_t>(pending_->entry.passes + 1, 2);
      pending_->rcx = regs->rcx;
      last_stop_was_exit_ = false;
      return;
    }
    if (same && !vmm_step) {  // an exit in the middle: it completes on re-entry
      if (!exit_note.empty()) pending_->exit_notes.emplace_back(exit_note);
      last_stop_was_exit_ = true;
      return;
    }
    if (same && vmm_step && last_stop_was_exit_) {
      // The step exit that follows an exit whose instruction the VMM completed
      // (a trapped one it emulated): nothing new ran.
      last_stop_was_exit_ = false;
      return;
    }
    ran = *std::move(pending_);
    pending_.reset();
    if (!vmm_step && !exit_note.empty()) ran->exit_notes.emplace_back(exit_note);
  }
  last_stop_was_exit_ = !vmm_step;

  absl::StatusOr<Pending> next = Fetch(*regs, *sregs);
  if (!next.ok()) {
    Stop(std::string(next.status().message()), false);
    return;
  }

  if (ran) {
    const bool to_user = ran->is_iret && ran->iret_cpl == 3;
    const bool branch = IsBranch(*ran);
    const uint64_t fallthrough = ran->entry.address + ran->length;
    if (to_user) {
      ran->entry.notes.push_back(absl::StrFormat(
          "to CPL3 at %s", ran->iret_rip ? Symbolize(*ran->iret_rip) : std::string("?")));
    }
    Commit(*std::move(ran));

    // Where did control go? Into the kernel through the IDT (stopped at the
    // handler, or one instruction into it when the host ran that instruction with
    // the delivery), or on along a straight line the host did not stop in.
    std::optional<Entered> entered;
    if (cpl == 0 && (to_user || regs->rip != fallthrough)) {
      entered = KernelEntry(*regs, *sregs);
      if (!entered) {
        for (const auto& [handler, vector] : idt_) {
          kvm_regs at = *regs;
          at.rip = handler;
          absl::StatusOr<Pending> first = Fetch(at, *sregs);
          if (!first.ok() || handler + first->length != regs->rip) continue;
          const bool pushed = Mnemonic(first->entry.text).starts_with("push");
          entered = KernelEntry(at, *sregs, pushed ? 8 : 0);
          if (!entered) break;
          Pending unstepped = Unstepped(
              handler, *sregs,
              "ran with the exception's delivery: the host stopped only after it");
          if (entered->from_cpl == 3) ClearStack();
          AnnotateEntry(unstepped.entry, *entered, to_user);
          if (to_user) PushOpaque(*entered, /*first_unstepped=*/true);
          Commit(std::move(unstepped));
          entered.reset();
          to_user_handled_ = true;
          break;
        }
      } else {
        AnnotateEntry(next->entry, *entered, to_user);
        if (to_user) PushOpaque(*entered, /*first_unstepped=*/false);
        if (entered->from_cpl == 3) ClearStack();
        to_user_handled_ = true;
      }
    }
    if (to_user && !to_user_handled_ && cpl == 0) {
      Entered unknown;
      unknown.name = "an entry the trace cannot name";
      PushOpaque(unknown, false);
      ClearStack();
    } else if (!to_user_handled_ && cpl == 0 && !branch && regs->rip != fallthrough) {
      // Straight-line code the host ran without stopping (on PVM: the instruction
      // after each swapgs). Supply it if a few instructions lead exactly here.
      std::vector<Pending> filled;
      uint64_t at = fallthrough;
      for (int i = 0; i < 4 && at != regs->rip; ++i) {
        Pending p = Unstepped(at, *sregs,
                              "ran without a step stop (the host did not stop after the "
                              "instruction before)");
        if (IsBranch(p) || p.length == 0) break;
        at += p.length;
        filled.push_back(std::move(p));
      }
      if (at == regs->rip) {
        for (Pending& p : filled) Commit(std::move(p));
      } else {
        next->entry.notes.push_back(absl::StrFormat(
            "control reached here from %s without a step stop the trace can explain",
            Symbolize(fallthrough - 1)));
      }
    }
    to_user_handled_ = false;
  }
  if (next->trap_site) {
    // A single step would pass over the patched `hlt` without its exit (the host
    // defers KVM_EXIT_HLT behind the step's KVM_EXIT_DEBUG): run it unstepped, so
    // that the trap engine sees the exit and emulates the site, and step again
    // after that exit.
    if (absl::Status s = context_.cpu.debug().SetSingleStep(GuestDebug::kStepTracer, false);
        !s.ok()) {
      Stop(absl::StrCat("could not stop single-stepping at a trap site: ", s.message()), false);
      return;
    }
    step_after_exit_ = true;
  }
  if (next->is_iret && next->iret_rip) {
    user_entry_ = *next->iret_rip;
    if (next->iret_cpl == 3) stats_before_user_ = ReadEmulationStats();
  }
  pending_ = *std::move(next);
}

std::optional<std::pair<uint64_t, uint64_t>> StepTracer::ReadEmulationStats() {
  // Where CPL0 runs directly, KVM's emulator counts only what it emulates for its own
  // reasons (a skipped instruction without NRIPS, a kernel-entry stop): nothing of
  // the guest's user code.
  if (!context_.cpl0_emulated) return std::nullopt;
  absl::StatusOr<StatsSnapshot> stats = context_.backend.ReadStats();
  if (!stats.ok()) return std::nullopt;
  auto emulated = stats->find("insn_emulation");
  auto failed = stats->find("insn_emulation_fail");
  if (emulated == stats->end() || failed == stats->end()) return std::nullopt;
  return std::make_pair(emulated->second, failed->second);
}

void StepTracer::AnnotateEntry(trace::Entry& first, const Entered& entered, bool from_user) {
  if (entered.from_cpl == 3) {
    first.notes.push_back(absl::StrFormat("kernel entry from CPL3 at %s: %s",
                                          Symbolize(entered.from_rip), entered.name));
  } else {
    first.notes.push_back(absl::StrFormat("%s taken in the kernel at %s", entered.name,
                                          Symbolize(entered.from_rip)));
    frames_.push_back(1);
    stack_.push_back(absl::StrCat("[", entered.name, "]"));
  }
  (void)from_user;
}

void StepTracer::PopFrame() {
  if (frames_.empty()) return;
  stack_.resize(stack_.size() - std::min<size_t>(stack_.size(), frames_.back()));
  frames_.pop_back();
}

void StepTracer::ClearStack() {
  stack_.clear();
  frames_.clear();
}

void StepTracer::PushOpaque(const Entered& entered, bool first_unstepped) {
  trace::Entry opaque;
  // What KVM's emulator did between the iretq's stop and this one: the iretq, the
  // handler's first instruction if the host ran it unstepped, and the rest in the
  // user code.
  std::optional<std::pair<uint64_t, uint64_t>> now = ReadEmulationStats();
  if (now && stats_before_user_) {
    const uint64_t kernel = 1 + (first_unstepped ? 1 : 0);
    const uint64_t emulated = now->first - stats_before_user_->first;
    opaque.host_emulated = emulated >= kernel ? emulated - kernel : 0;
    opaque.host_emulation_failures = now->second - stats_before_user_->second;
  }
  stats_before_user_.reset();
  opaque.kind = trace::Entry::Kind::kOpaque;
  opaque.cpl = 3;
  opaque.address = user_entry_;  // the iretq's target
  opaque.symbol = Symbolize(opaque.address);
  opaque.exit_address = entered.from_rip;
  opaque.exit_symbol = entered.from_rip != 0 ? Symbolize(entered.from_rip) : "?";
  opaque.exit_via = entered.name;
  if (out_->opaque_reason.empty()) out_->opaque_reason = options_.opaque_reason;
  out_->entries.push_back(std::move(opaque));
}

}  // namespace sigvisor::x86
