// An instruction trace of one measured phase: every guest instruction the host let
// the VMM single-step, in order, and each stretch it could not step (on PVM hosts,
// all CPL3 code) as one opaque entry with where it was entered and left. Exits,
// traps, exceptions and privilege changes are notes on the instruction where they
// happened. Architecture-neutral: the x86-64 stepper (arch/x86_64/vmm/trace/step_tracer.h)
// fills it in; vmm/trace/analysis.h cuts it into operations and profiles it.
#ifndef SIGVISOR_VMM_TRACE_TRACE_H_
#define SIGVISOR_VMM_TRACE_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vmm/run/trap_mechanism.h"

namespace sigvisor::trace {

struct Entry {
  enum class Kind {
    kInsn,    // one executed instruction
    kOpaque,  // code the host ran without stepping it
  };
  Kind kind = Kind::kInsn;
  int cpl = 0;

  // kInsn: the instruction.
  uint64_t address = 0;
  std::vector<uint8_t> bytes;  // as the image has them (a patched trap site's original)
  std::string text;            // disassembly (AT&T)
  std::string symbol;          // "get_signal+0x1c", or the address
  std::string function;        // the symbol's name alone; "" when no symbol covers it
  // The functions inlined at this address into `function`, outermost first (from
  // the image's DWARF; empty without it).
  std::vector<std::string> inlined;
  // The functions it was called from, outermost first, as the trace saw calls and
  // returns since the kernel was entered (each call site with its inlined ones).
  std::vector<std::string> callers;
  bool debug_register_write = false;  // a move to a debug register (x86: mov to %drN)
  bool debug_control_write = false;   // one to the debug control register (x86: %dr7)
  // How many times the host ran it: a `rep` string instruction takes two passes on
  // an emulating host (one does the work, one finds the count at zero and moves
  // on), and KVM's insn_emulation counts each pass.
  uint32_t passes = 1;
  // It ran without a step stop of its own, and the trace supplies it from the
  // control flow around it (why: a note).
  bool unstepped = false;

  // kOpaque: entered at `address`, left at `exit_address` through `exit_via`.
  uint64_t exit_address = 0;
  std::string exit_symbol;
  std::string exit_via;  // "#DE", "#UD: int $0x80 (rt_sigreturn)", ...
  // Instructions in it the host ran through its emulator all the same, by KVM's
  // insn_emulation (read at the span's ends): on PVM the user's `int $0x80`, which
  // KVM decodes, cannot emulate (insn_emulation_fail) and turns into #UD. Counted
  // with the kernel's instructions, as the ledger counts them. Unknown: nullopt.
  std::optional<uint64_t> host_emulated;
  std::optional<uint64_t> host_emulation_failures;

  // What happened at this instruction: exits, traps, exceptions, privilege changes.
  std::vector<std::string> notes;
};

// Whose code a trace runs through, which decides how its ops are cut into stages:
// the bundled kernel's by its white-box names (analysis.h), Linux's by a table of its
// functions (linux_stages.h).
enum class Kernel { kBundled, kLinux };
// "sigvisor" or "linux", as the trace's JSON says it.
constexpr std::string_view KernelName(Kernel kernel) {
  return kernel == Kernel::kLinux ? "linux" : "sigvisor";
}

struct Trace {
  std::string phase;        // the traced phase's name
  Kernel kernel = Kernel::kBundled;
  uint64_t ops = 0;         // its operations
  std::string variant;      // the kernel build, for reports ("baseline", ...)
  std::string host_kind;    // "pvm" | "hardware"
  TrapMechanism trap = TrapMechanism::kOff;
  // Why some code is opaque on this host ("" when everything was stepped).
  std::string opaque_reason;
  std::vector<Entry> entries;
  bool complete = false;    // the phase's END was reached while tracing
  std::string stopped_why;  // when not complete
  uint64_t vmm_steps = 0;   // single-step exits taken

  // The run's own ledger for the same phase (kernel instructions as KVM counted
  // them: insn_emulation, net of the markers), where the host counts them.
  std::optional<uint64_t> ledger_kernel_insns;         // the whole phase, net
  std::optional<uint64_t> ledger_marker_kernel_insns;  // the calibration phase

  // How the traced run ended (OutcomeName: "exited", "timeout", ...; "" unknown) and
  // its --timeout ("60s"), for the summary's words when there is no ledger count.
  std::string run_outcome;
  std::string run_timeout;
};

}  // namespace sigvisor::trace

#endif  // SIGVISOR_VMM_TRACE_TRACE_H_
