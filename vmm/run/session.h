// One guest run: the run loop, exit dispatch over the bus, the exit ledger, the
// guest's phase markers and the watchdog. Backend-neutral: KVM or a fake.
#ifndef SIGVISOR_VMM_RUN_SESSION_H_
#define SIGVISOR_VMM_RUN_SESSION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "vmm/ledger/exit_ledger.h"
#include "vmm/ledger/phase_tracker.h"
#include "vmm/ledger/trap_ledger.h"
#include "vmm/machine/bus.h"
#include "vmm/run/backend.h"
#include "vmm/run/exit_interceptor.h"
#include "vmm/run/hypercall_table.h"
#include "vmm/run/outcome.h"
#include "vmm/sandbox/seccomp_filter.h"

namespace sigvisor {

struct SessionOptions {
  absl::Duration timeout = absl::Seconds(60);
  // Receives guest console output as it arrives (stdout, stderr, or nothing).
  std::function<void(std::string_view)> console_sink;
  // At most this much console output is kept for the report.
  size_t max_console_bytes = 1 << 20;
  // At most this much console output is streamed to console_sink (--max-output);
  // past it the guest's further output is dropped and counted, and the report says so.
  uint64_t max_output_bytes = uint64_t{64} << 20;
  // When set, the run loop runs on a thread of its own confined by this seccomp
  // allowlist (vmm/sandbox) from before the first KVM_RUN to the end of the run.
  std::optional<SandboxPolicy> sandbox;
  // Tests: called on the run-loop thread after the sandbox is installed, before the
  // first KVM_RUN.
  std::function<void()> sandboxed_hook;
  // Describes a guest location for diagnoses: address, symbol, instruction bytes.
  std::function<std::string(const CpuLocation&)> describe;
  // See every exit first, in this order (trap mechanism, tracer, debugger: see
  // exit_interceptor.h); null entries are skipped. Each must outlive the run.
  std::vector<ExitInterceptor*> interceptors;
  // The guest TSC's rate where it runs in real time (KVM_GET_TSC_KHZ): each phase's
  // ns and tsc_cycles are checked against each other at it. 0: unknown, or the
  // guest's counter is not a clock (an interpreter's modelled cycles): no check.
  uint64_t guest_tsc_khz = 0;
  // Where the guest's calls arrive on the bus (a gate registered there: sigvisor's
  // hypercall ports, a Linux guest's marker port), or null for a guest without them (a
  // Multiboot kernel). Must outlive the run.
  const CallGate* hypercalls = nullptr;
  // When set, the run ends with Outcome::kInterrupted once the flag is (the watchdog
  // looks at it and kicks the vCPU out as at a timeout): `sigvisor run`'s SIGINT and
  // SIGTERM. Must outlive the run.
  const std::atomic<bool>* interrupt = nullptr;
  // A run on several vCPUs: the other vCPUs' counters, read at each phase marker (on
  // the run loop's thread, while they run on).
  std::function<std::vector<VcpuSample>()> sample_other_vcpus;
};

// A run on several vCPUs: one of the others (1 ..), over the whole run.
struct VcpuRun {
  int vcpu = 0;
  ExitLedger ledger;        // its exits (accesses named)
  StatsSnapshot kvm_stats;  // KVM's statistics of it, from its start to the run's end
  // IPIs the VMM delivered to it for the guest's send_ipi hypercalls (ipi=pv).
  uint64_t ipis_delivered_by_vmm = 0;
};

struct RunResult {
  Outcome outcome = Outcome::kHostError;
  int exit_code = 1;      // the guest's exit status when kExited, else non-zero
  std::string diagnosis;  // one line: what happened and where (empty for kExited)
  ExitLedger ledger;
  TrapLedger traps;         // what the interceptor trapped (empty without one)
  StatsSnapshot kvm_stats;  // deltas over the whole run
  std::vector<PhaseResult> phases;
  std::vector<std::string> warnings;
  std::string console;
  bool console_truncated = false;
  uint64_t console_bytes = 0;          // everything the guest wrote to its console
  uint64_t console_dropped_bytes = 0;  // not streamed: past --max-output
  uint64_t warnings_dropped = 0;       // guest-triggered warnings past the cap
  // The sandbox the run loop ran in: "off" or the seccomp allowlist used.
  std::string sandbox = "off";
  // False when the run did not end with the guest's own exit: the phases reported
  // are those that ended before the failure (timeout, interrupt, crash, kill).
  bool complete() const { return outcome == Outcome::kExited; }
  uint64_t run_ns = 0;              // first KVM_RUN to the end
  uint64_t first_hypercall_ns = 0;  // first KVM_RUN to the guest's first hypercall
  // KVM's statistics from the start to the guest's first hypercall: the cost of
  // booting (on a PVM host insn_emulation = the kernel's boot instructions).
  StatsSnapshot boot_kvm_stats;
  // A run on several vCPUs: the others, in vCPU order (empty on one), filled in by the
  // machine after the run. `kvm_stats`, `boot_kvm_stats` and the phases' own counts
  // are vCPU 0's, and so is `ledger` for the bundled kernel (a Multiboot kernel's has
  // every vCPU's exits merged, its one exit table).
  std::vector<VcpuRun> other_vcpus;
};

class Session {
 public:
  // `backend` and `bus` must outlive the session.
  Session(Backend& backend, Bus& bus, SessionOptions options);

  RunResult Run();

  // The guest's console (the serial port, the console_write hypercall): streamed to
  // console_sink and kept for the report, within their limits. The first output
  // marks the end of boot.
  void ConsoleWrite(std::string_view text);

 private:
  struct PendingBegin {
    std::string name;
    uint64_t ops;
    uint64_t guest_tsc;
    bool calibration;
    GuestIpiCounts guest_ipis;
  };
  struct PendingEnd {
    uint64_t guest_tsc;
    GuestIpiCounts guest_ipis;
  };

  // What the loop learns while handling one exit.
  struct HandledExit {
    bool intercepted = false;  // an interceptor took it; `text` is its detail
    // The interceptor's view (exit_interceptor.h: valid until its next Intercept(),
    // so through this exit's ledger record and observers).
    std::string_view text;
    bool instrument = false;   // an instrument's exit: not in the ledger
    std::optional<TrapRecord> trap;
  };

  // Handles one exit; returns false when the run is over (result_ filled in).
  bool Dispatch(VmExit& exit, HandledExit& handled);
  // Tells the interceptors how the run ended and hands over the result.
  RunResult Finish();
  // The loop itself: KVM_RUN, dispatch, until the run ends.
  void RunLoop();
  void AddWarning(std::string warning);
  // The interceptors' turn; nullopt when none took the exit.
  std::optional<bool> Intercept(const VmExit& exit, HandledExit& handled);
  // After each exit: the interceptors observe it, then its phase markers.
  void Notify(const VmExit& exit, const HandledExit& handled);
  // Port I/O and MMIO over the bus (device_exit.h), with the session's outcome.
  // `instrument`: a hypercall's owner said the exit was its instrument's.
  bool DispatchDeviceExit(VmExit& exit, bool& instrument);
  // A hypercall's result, applied in the loop's order: how the run ended, a phase
  // marker, a warning. kGuestEnded when the run ends.
  RunVerdict TakeHypercall(HypercallResult& call);
  void EndPhase(PendingEnd end);
  bool Fail(Outcome outcome, std::string what);
  // `guest_ipis`: the marker's (an SMP kernel's IPI counts), or empty.
  PhaseSample Sample(uint64_t guest_tsc, GuestIpiCounts guest_ipis);
  // The traps interceptors collected from the guest's own counts (--trap=pv).
  void CollectGuestCountedTraps();
  // Called by every hypercall: the first one marks the end of boot.
  void NoteHypercall();
  uint64_t SinceStart() const;
  // OnStart() of every interceptor, on the loop's thread; false (run failed) if one fails
  // (exit_interceptor.h: which failure is which outcome).
  bool StartInterceptors();

  Backend& backend_;
  Bus& bus_;
  SessionOptions options_;
  RunResult result_;
  PhaseTracker phases_;
  std::optional<PendingBegin> pending_begin_;
  std::vector<PhaseMarker> pending_markers_;  // set by the exit being handled
  std::vector<PendingEnd> pending_ends_;      // END markers of the exit being handled
  bool stop_requested_ = false;
  uint64_t start_ns_ = 0;
  // When the interceptors started: --timeout runs from here, so that it covers their
  // start too (a debugger's wait for its client).
  uint64_t interceptors_start_ns_ = 0;
  StatsSnapshot stats_at_start_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_SESSION_H_
