// The session's hooks for mechanisms that work inside the run loop: a trap mechanism
// (exits it consumes), the instruction tracer (single steps, phase markers) and the
// gdb stub (debug exits, a client that holds the guest stopped).
//
// A session has an ordered list of interceptors. Every exit is offered to them in
// order before the session's own dispatch; the first that answers a verdict
// takes it. An exit an interceptor handles is counted in the exit ledger like any
// other (with the interceptor's detail; unless it says the exit was its own
// instrument's, like a single step) and, when it was a trap, in the trap ledger.
// Then every interceptor observes the exit as it was handled, and the phase markers
// the guest set during it, before the guest re-enters.
//
// An interceptor's words are views, not copies: the exit's handling is timed (the
// run loop's exit ledger), and an interceptor that formats or allocates there adds to
// it. Lifetime contract: the text an Interception's `detail` and `trap` view stays
// valid and unchanged until that interceptor's next Intercept() call (its Observe
// and OnPhaseMarker for the same exit included); the session copies what it keeps
// (the ledgers copy a name the first time they see it). Literals qualify; a text
// made at run time is made once and kept by the interceptor (the trap engine's
// per-kind details, its site table's symbols). A TrapBatch, collected outside any
// timed interval, owns its strings.
//
// Several interceptors coexist because each takes only what it caused or asked for:
// the trap engine its patched `hlt`s and DR7.GD exits, the tracer its single steps,
// the debugger its breakpoints and its own steps (x86: GuestDebug arbitrates the one
// KVM_SET_GUEST_DEBUG state among them).
#ifndef SIGVISOR_VMM_RUN_EXIT_INTERCEPTOR_H_
#define SIGVISOR_VMM_RUN_EXIT_INTERCEPTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "vmm/run/outcome.h"
#include "vmm/run/phase_marker.h"
#include "vmm/run/vm_exit.h"

namespace sigvisor {

// One trapped guest instruction, for the trap ledger. Views: see the lifetime
// contract above.
struct TrapRecord {
  std::string_view kind;  // "dr_write", "dr_read", "segment_load", "msr_write"
  uint64_t address = 0;   // the site
  std::string_view site;  // its symbol+offset
};

struct Interception {
  // Unset: not this interceptor's exit; the next interceptor, then the session,
  // dispatches it. Set: the interceptor took the exit, and the loop goes on
  // (kContinue) or the run ends (kRunFailed with `outcome`: kUnexpectedExit when the
  // guest did something the mechanism cannot handle, kHostError when an ioctl failed,
  // kKilled at the mechanism's request, a debugger's kill). An interceptor does not
  // answer kGuestEnded: the guest ends its run through devices and hypercalls.
  std::optional<RunVerdict> verdict;
  Outcome outcome = Outcome::kUnexpectedExit;  // kRunFailed
  // kContinue: the exit's detail in the ledger (a view: see the lifetime contract).
  std::string_view detail;
  std::optional<TrapRecord> trap;  // kContinue: the trap it was, if any
  uint64_t dr_loads = 0;           // hardware debug-register loads it caused
  uint64_t trap_hypercalls = 0;    // --trap=pv: the guest's load requests it served
  std::string diagnosis;           // kRunFailed: one line
  // kContinue: the exit is an artefact of the interceptor's own instrument (a single
  // step it asked for), not something the guest did: kept out of the exit ledger.
  bool instrument = false;

  // The common answers: handled with a detail, the interceptor's own instrument, the
  // run failed, or failed by a host error of `what`.
  static Interception Handled(std::string_view detail) {
    Interception out;
    out.verdict = RunVerdict::kContinue;
    out.detail = detail;
    return out;
  }
  static Interception Instrument(std::string_view detail) {
    Interception out = Handled(detail);
    out.instrument = true;
    return out;
  }
  static Interception RunFailed(Outcome outcome, std::string diagnosis) {
    Interception out;
    out.verdict = RunVerdict::kRunFailed;
    out.outcome = outcome;
    out.diagnosis = std::move(diagnosis);
    return out;
  }
  static Interception HostError(std::string_view what, const absl::Status& status) {
    return RunFailed(Outcome::kHostError, std::string(what) + ": " + std::string(status.message()));
  }
};

// Traps a paravirtual guest counted itself (--trap=pv: no exit per trap), as the
// interceptor collected them: `count` of `kind` at `address` (`site`). Owning
// strings: batches are collected at phase boundaries and the end, outside any
// exit's timed interval, and their sites are symbolized there.
struct TrapBatch {
  std::string kind;
  uint64_t address = 0;
  std::string site;
  uint64_t count = 0;
};

// An exit as it was handled, for observers.
struct ObservedExit {
  const VmExit& exit;
  // The exit's detail as the exit ledger names it, formatted when an observer asks
  // (the tracer, which prints it), never on every exit.
  absl::FunctionRef<std::string()> detail;
  const TrapRecord* trap;          // the trap it was, or null
  bool instrument;                 // an interceptor's own (not in the ledger)
};

// How the run ended, for interceptors that report it onward (a debugger's client).
struct RunEnd {
  Outcome outcome = Outcome::kHostError;
  int exit_code = 0;
  std::string_view diagnosis;
};

class ExitInterceptor {
 public:
  virtual ~ExitInterceptor() = default;

  // Before the first guest instruction (a debugger waits for its client here), on
  // the thread that runs the loop, inside its sandbox: threads started here inherit
  // the seccomp filter. An error ends the run as a host error before it starts
  // (kCancelled: as killed; kDeadlineExceeded: as a timeout, the run's --timeout
  // having passed while it waited; kAborted: as interrupted, SessionOptions::interrupt
  // having been set while it waited). The run's --timeout counts from here.
  virtual absl::Status OnStart() { return absl::OkStatus(); }

  // Takes the exit (a verdict) or leaves it (none).
  virtual Interception Intercept(const VmExit& exit) = 0;

  // Every exit once handled and counted, before the guest re-enters.
  virtual void Observe(const ObservedExit& exit) {}

  // The traps the guest counted on its own since the last call: taken into the trap
  // ledger at every phase boundary (before its sample) and at the end of the run.
  virtual std::vector<TrapBatch> CollectTraps() { return {}; }

  // A phase marker of the exit just handled (after Observe).
  virtual void OnPhaseMarker(const PhaseMarker& marker) {}

  // The run is over (the guest exited, failed or was stopped).
  virtual void OnEnd(const RunEnd& end) {}

  // Warnings for the run's report, asked for once after OnEnd: what the mechanism
  // was asked to do and could not (one sentence each).
  virtual std::vector<std::string> Warnings() { return {}; }
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_EXIT_INTERCEPTOR_H_
