// The x86-64 instruction tracer: from the BEGIN marker of a measured phase to its
// END, the VMM single-steps the guest (KVM_GUESTDBG_SINGLESTEP through GuestDebug)
// and records every instruction into a trace::Trace: address, symbol, bytes,
// Capstone's disassembly, the call stack it saw, and notes where an exit, a trap,
// an exception or a privilege change happened.
//
// Each stop (a step exit, or any other exit while tracing) shows the instruction
// about to run; the one shown at the previous stop has then run. Where the host
// does not step some code (PVM: CPL3), an `iretq` to user mode is followed by a stop
// at the next kernel entry: the user code in between becomes one opaque entry, from
// the `iretq`'s target to the user RIP in the exception frame the kernel entry
// pushed (read through the guest IDT to know the vector and its error code).
//
// Where the host runs guest CPL0 directly (hardware KVM), a step is RFLAGS.TF, which
// exception delivery clears: there the tracer installs kernel-entry stops
// (kernel_entry_stops.h) so that each entry into the kernel stops at its handler, and
// it stops stepping while the guest is at CPL3. Both host kinds then give the same
// trace: every kernel instruction stepped, user code opaque.
//
// A stop that shows the same instruction again is not a new one: a `rep` string
// instruction the host steps per iteration (counted once, as KVM counts it), an
// exit in the middle of an instruction (port I/O completes on re-entry), or the
// step exit right after a trapped instruction the VMM emulated.
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRACE_STEP_TRACER_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRACE_STEP_TRACER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/trace/kernel_entry_stops.h"
#include "arch/x86_64/vmm/trap/decoder.h"
#include "vmm/run/exit_interceptor.h"
#include "vmm/trace/inline_info.h"
#include "vmm/trace/trace.h"

namespace sigvisor::x86 {

struct StepTracerOptions {
  std::string phase;  // the phase to trace; "" = the first measured one
  // A safety stop: at most this many instructions are stepped (the trace then
  // says it is incomplete and the guest runs on unstepped).
  uint64_t max_steps = 5'000'000;
  // Why code the host does not step is opaque, for the trace ("" = a generic line).
  std::string opaque_reason;
  // Names the kernel's code instead of the image's own symbols (a stripped Linux
  // vmlinux: its kallsyms, or a System.map given); null = the image's.
  std::shared_ptr<const SymbolTable> kernel_symbols;
};

class StepTracer : public ExitInterceptor {
 public:
  // A factory for MachineConfig::interceptors; the trace goes to `out`, which must
  // outlive the run.
  static InterceptorFactory Factory(StepTracerOptions options, trace::Trace* out);

  StepTracer(MachineContext& context, StepTracerOptions options, trace::Trace* out,
             trap::Decoder decoder);

  Interception Intercept(const VmExit& exit) override;
  void Observe(const ObservedExit& exit) override;
  void OnPhaseMarker(const PhaseMarker& marker) override;
  void OnEnd(const RunEnd& end) override;

 private:
  // The instruction at the last stop, not yet known to have run.
  struct Pending {
    trace::Entry entry;
    uint8_t length = 0;
    // is_iret: any return to another privilege level (iretq, or sysretq to CPL3).
    bool is_call = false, is_ret = false, is_iret = false, is_rep = false;
    bool uncounted = false;  // the marker's own `out`, completing on re-entry
    bool trap_site = false;  // patched by the trap engine: run unstepped
    uint64_t rcx = 0;        // for rep: the count before the step
    // An iretq's target, read from its frame before it ran.
    std::optional<uint64_t> iret_rip;
    int iret_cpl = 0;
    std::vector<std::string> exit_notes;  // exits seen while it was pending
  };

  void Start();
  void Stop(std::string why, bool complete);
  // A stop: the guest is about to run the instruction at RIP.
  void OnStop(bool vmm_step, std::string_view exit_note);
  absl::StatusOr<Pending> Fetch(const kvm_regs& regs, const kvm_sregs& sregs);
  void Commit(Pending pending);
  void ReadIdt(const kvm_sregs& sregs);
  // At a kernel entry through the IDT: "#DE", with the interrupted RIP and CPL.
  struct Entered {
    int vector = -1;
    std::string name;
    uint64_t from_rip = 0;
    int from_cpl = 0;
  };
  // `regs.rip` must be an IDT handler; `rsp_adjust`: what the handler's first
  // instruction pushed, when the host ran it before stopping.
  std::optional<Entered> KernelEntry(const kvm_regs& regs, const kvm_sregs& sregs,
                                     uint64_t rsp_adjust = 0);
  static bool IsBranch(const Pending& p);
  Pending Unstepped(uint64_t address, const kvm_sregs& sregs, std::string why);
  void AnnotateEntry(trace::Entry& first, const Entered& entered, bool from_user);
  void PushOpaque(const Entered& entered, bool first_unstepped);
  // KVM's insn_emulation and insn_emulation_fail now, if the host has them.
  std::optional<std::pair<uint64_t, uint64_t>> ReadEmulationStats();
  std::string Symbolize(uint64_t address) const;
  const SymbolTable& KernelSymbols() const;
  // At the END marker from user code (a Linux process's port write): the return to
  // user mode still pending ran, and the user code after it is one opaque entry.
  void EndInUserMode();

  MachineContext& context_;
  StepTracerOptions options_;
  trace::Trace* out_;
  trap::Decoder decoder_;
  trace::InlineInfo inlines_;
  std::vector<ElfImage> user_programs_;  // for user-code symbols
  static std::vector<ElfImage> UserPrograms(const ElfImage& kernel);
  bool tracing_ = false;
  bool done_ = false;
  std::optional<Pending> pending_;
  std::map<uint64_t, int> idt_;  // handler address -> vector
  uint64_t syscall_entry_ = 0;   // MSR_LSTAR at the start: where SYSCALL enters, 0 if unknown
  std::vector<std::string> stack_;  // callers, outermost first
  std::vector<size_t> frames_;      // names each call pushed onto stack_
  void PopFrame();
  void ClearStack();
  uint64_t user_entry_ = 0;      // where opaque user code was entered (an iretq's target)
  bool last_stop_was_exit_ = false;
  bool to_user_handled_ = false;
  bool step_after_exit_ = false;  // stepping paused over a trap site
  // PVM, a phase begun at CPL3: until its first kernel entry, execution breakpoints on
  // the gates of the exceptions user code raises (they fire at CPL0 there; the host's
  // single step does not stop at CPL3), and no step. Empty otherwise.
  static constexpr int kUserEntryVectors[] = {0 /* #DE */,  13 /* #GP */, 6 /* #UD */,
                                              14 /* #PF */, 3 /* #BP */,  1 /* #DB */};
  std::vector<uint64_t> entry_breakpoints_;
  absl::Status ArmEntryBreakpoints();
  void DisarmEntryBreakpoints();
  // At a kernel entry: the breakpoints off, single steps on.
  absl::Status StepFromKernelEntry();
  // Hardware KVM: the IDT redirected while tracing; stepping paused at CPL3.
  std::optional<KernelEntryStops> entry_stops_;
  bool user_unstepped_ = false;
  std::optional<std::pair<uint64_t, uint64_t>> stats_before_user_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRACE_STEP_TRACER_H_
