// The application processors of a machine run with `--vcpus N`: one thread per AP
// vCPU, each with its own KVM_RUN loop over the machine's one bus (the bus serializes
// device dispatch). An AP starts one of two ways (StartMode):
//   kInitSipi   as on a PC (Multiboot kernels): it waits in KVM_RUN (mp_state
//               UNINITIALIZED) until the BSP sends INIT and a Startup IPI through the
//               in-kernel LAPIC; KVM then enters it in real mode at the SIPI vector << 12.
//   kHypercall  as a sigvisor SMP kernel asks (SIGVISOR_HC_CPU_UP, smp_boot.h): its
//               thread waits, out of KVM_RUN, until StartAp() hands it its entry, then
//               sets its own registers and mp_state RUNNABLE and runs.
//
// An AP's port I/O and MMIO to the board's call gate (set_gate) go to the gate, as vCPU
// 0's do: the calls the ABI lets any CPU make (console_write, exit, panic, send_ipi) are
// served on the AP's thread; the hypercall table refuses the others (only vCPU 0 makes
// them: CallingVcpu() tells it who calls).
//
// The BSP's Session stays the run's owner. An AP that ends the run (an exit or panic
// hypercall, isa-debug-exit, a triple fault, an absent device, ...) records why and
// kicks the BSP; interceptor() then ends the BSP's session, and TakeEnd() tells the
// caller what the AP did. When the BSP's run ends, the stopper's OnEnd (and Stop())
// kicks and joins the APs, before the session hands over its result (an AP's console
// output then no longer reaches it). Each AP keeps its own exit ledger (under a mutex:
// Sample() reads it while the AP runs) and its own KVM statistics fd.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_AP_RUNNER_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_AP_RUNNER_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "arch/x86_64/vmm/cpu/kvm_backend.h"
#include "arch/x86_64/vmm/machine/long_mode.h"
#include "vmm/kvm/kvm.h"
#include "vmm/ledger/exit_ledger.h"
#include "vmm/ledger/phase_tracker.h"
#include "vmm/machine/bus.h"
#include "vmm/run/backend.h"
#include "vmm/run/exit_interceptor.h"
#include "vmm/run/hypercall_table.h"
#include "vmm/run/session.h"
#include "vmm/sandbox/seccomp_filter.h"

namespace sigvisor::x86 {

class LocalApics;

class ApRunner {
 public:
  // How an AP ended the run.
  struct End {
    int vcpu = 0;
    Outcome outcome = Outcome::kHostError;
    int exit_code = 1;
    std::string diagnosis;  // empty for kExited
  };

  enum class StartMode { kInitSipi, kHypercall };

  // `aps` (vCPUs 1..N-1), `bus` and `bsp` must outlive the runner. `describe` names
  // a guest location in diagnoses; `sandbox`, when set, confines each AP thread as
  // the BSP's run loop is confined. Each AP opens its KVM statistics fd here (none
  // where the host refuses: its statistics are then empty).
  ApRunner(std::vector<KvmVcpu>& aps, Bus& bus, Backend& bsp,
           std::function<std::string(const CpuLocation&)> describe,
           std::optional<SandboxPolicy> sandbox, StartMode mode = StartMode::kInitSipi);
  ~ApRunner();

  // The board's call gate (must outlive the run), before Start(); null: none.
  void set_gate(const CallGate* gate) { gate_ = gate; }
  // The APs' interrupts come from the VMM's local APICs (`run --lapic vmm`; they must
  // outlive the runner), before Start().
  void UseVmmLapics(LocalApics& apics);

  // Starts one thread per AP; each waits for its start (StartMode).
  void Start();
  // Ends every AP thread (stop flag, kicks until each has left KVM_RUN or its wait)
  // and joins; then reads each AP's final statistics and where it was. Idempotent.
  void Stop();

  // kHypercall: AP `index` (1 ..) enters `entry` on its own thread. FailedPrecondition
  // when it cannot: another mode, no such AP, handed an entry before, or stopping.
  absl::Status StartAp(int index, const ApEntry& entry);

  // The vCPU whose thread calls this: an AP's index on its own thread, 0 on any other
  // (vCPU 0's run loop). For the hypercall table's caller().
  int CallingVcpu() const;

  // Each AP's counters now, in vCPU order: its exits by reason and KVM's statistics
  // of it. Any thread, while the APs run (the run loop's, at each phase marker).
  std::vector<VcpuSample> Sample() const;

  // Ends the BSP's run (kRunFailed, kKilled) once an AP has ended the run; add it to
  // the session's interceptors.
  ExitInterceptor* interceptor() { return &interceptor_; }
  // Stops the APs when the session's run ends (OnEnd), before the session hands over
  // its result; add it first among the session's interceptors.
  ExitInterceptor* stopper() { return &stopper_; }
  // After Stop(): the AP event that ended the run, if the BSP was stopped for one.
  std::optional<End> TakeEnd();
  // After Stop(): every AP's exits, merged.
  ExitLedger ledger() const;
  // After Stop(): each AP's own exits (accesses named), in vCPU order.
  std::vector<std::pair<int, ExitLedger>> per_vcpu_ledgers() const;
  // After Stop(): KVM's statistics of each AP from Start() to Stop(), in vCPU order
  // (empty maps where its fd could not be opened).
  std::vector<std::pair<int, StatsSnapshot>> final_stats() const;
  // After Stop(): where each AP that ran guest code was when it stopped ("vCPU 1: rip
  // ..."), for a timeout's diagnosis.
  std::vector<std::string> locations() const { return locations_; }
  // After Stop(): the APs that never ran guest code (kInitSipi: no INIT/SIPI came;
  // kHypercall: never started by CPU_UP).
  std::vector<int> never_started() const { return never_started_; }
  StartMode mode() const { return mode_; }

 private:
  class StopBsp : public ExitInterceptor {
   public:
    explicit StopBsp(ApRunner& runner) : runner_(runner) {}
    Interception Intercept(const VmExit& exit) override;

   private:
    ApRunner& runner_;
  };
  class StopAps : public ExitInterceptor {
   public:
    explicit StopAps(ApRunner& runner) : runner_(runner) {}
    Interception Intercept(const VmExit&) override { return {}; }
    void OnEnd(const RunEnd&) override { runner_.Stop(); }

   private:
    ApRunner& runner_;
  };

  struct Ap {
    int index = 0;  // the vCPU id
    KvmVcpu* vcpu = nullptr;
    std::unique_ptr<KvmBackend> backend;
    mutable std::mutex ledger_mutex;  // the AP's thread records, Sample() reads
    ExitLedger ledger;
    // The exits by reason, each counted before it is dispatched (the ledger records it
    // after, with its time): what Sample() reads. An exit's effects (an IPI it sends,
    // a console line) come in its dispatch, so a phase marker that any of them led to
    // always finds the exit counted.
    ExitCounts counted;
    std::atomic<std::thread::id> thread_id{};
    std::atomic<bool> done{false};
    bool entered = false;  // ran guest code (a guest exit came back)
    // kHypercall: its entry, under start_mutex_; `started` once handed one.
    std::optional<ApEntry> entry;
    bool started = false;
    StatsSnapshot stats_at_start;
    StatsSnapshot stats_at_stop;
  };

  void Loop(Ap& ap);
  // kHypercall: waits for the AP's entry and enters it; false when the loop must end.
  bool AwaitEntry(Ap& ap);
  // An AP's exit; false when the AP's loop ends.
  bool Dispatch(Ap& ap, VmExit& exit);
  void EndRun(Ap& ap, Outcome outcome, int exit_code, std::string diagnosis);

  Bus& bus_;
  Backend& bsp_;
  std::function<std::string(const CpuLocation&)> describe_;
  std::optional<SandboxPolicy> sandbox_;
  StartMode mode_;
  const CallGate* gate_ = nullptr;
  std::vector<std::unique_ptr<Ap>> aps_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ended_{false};   // an AP ended the run
  std::atomic<bool> bsp_killed_{false};
  std::mutex end_mutex_;
  std::optional<End> end_;
  std::mutex start_mutex_;  // the APs' entries (kHypercall) and stop_ for their waits
  std::condition_variable start_cv_;
  std::mutex stop_mutex_;  // one Stop() at a time (the stopper's, the machine's)
  std::vector<int> never_started_;
  std::vector<std::string> locations_;
  StopBsp interceptor_{*this};
  StopAps stopper_{*this};
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_AP_RUNNER_H_
