// The application processors of a Multiboot machine run with `--vcpus N`: one thread
// per AP vCPU, each with its own KVM_RUN loop over the machine's one bus (the bus
// serializes device dispatch). An AP starts the way it does on a PC: it waits in
// KVM_RUN (mp_state UNINITIALIZED) until the BSP sends INIT and a Startup IPI through
// the in-kernel LAPIC; KVM then enters it in real mode at the SIPI vector << 12.
//
// The BSP's Session stays the run's owner. An AP that ends the run (isa-debug-exit,
// a triple fault, an absent device, ...) records why and kicks the BSP; interceptor()
// then ends the BSP's session, and TakeEnd() tells the caller what the AP did. When
// the BSP ends the run, Stop() kicks and joins the APs. Each AP keeps its own exit
// ledger; ledger() merges them after Stop().
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_AP_RUNNER_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_AP_RUNNER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "arch/x86_64/vmm/cpu/kvm_backend.h"
#include "vmm/kvm/kvm.h"
#include "vmm/ledger/exit_ledger.h"
#include "vmm/machine/bus.h"
#include "vmm/run/backend.h"
#include "vmm/run/exit_interceptor.h"
#include "vmm/run/session.h"
#include "vmm/sandbox/seccomp_filter.h"

namespace sigvisor::x86 {

class ApRunner {
 public:
  // How an AP ended the run.
  struct End {
    int vcpu = 0;
    Outcome outcome = Outcome::kHostError;
    int exit_code = 1;
    std::string diagnosis;  // empty for kExited
  };

  // `aps` (vCPUs 1..N-1), `bus` and `bsp` must outlive the runner. `describe` names
  // a guest location in diagnoses; `sandbox`, when set, confines each AP thread as
  // the BSP's run loop is confined.
  ApRunner(std::vector<KvmVcpu>& aps, Bus& bus, Backend& bsp,
           std::function<std::string(const CpuLocation&)> describe,
           std::optional<SandboxPolicy> sandbox);
  ~ApRunner();

  // Starts one thread per AP; each waits in KVM_RUN for its INIT/SIPI.
  void Start();
  // Ends every AP thread (stop flag, kicks until each has left KVM_RUN) and joins.
  void Stop();

  // Ends the BSP's run (kRunFailed, kKilled) once an AP has ended the run; add it to
  // the session's interceptors.
  ExitInterceptor* interceptor() { return &interceptor_; }
  // After Stop(): the AP event that ended the run, if the BSP was stopped for one.
  std::optional<End> TakeEnd();
  // After Stop(): every AP's exits.
  ExitLedger ledger() const;
  // After Stop(): the APs that never left mp_state UNINITIALIZED (no INIT/SIPI).
  std::vector<int> never_started() const { return never_started_; }

 private:
  class StopBsp : public ExitInterceptor {
   public:
    explicit StopBsp(ApRunner& runner) : runner_(runner) {}
    Interception Intercept(const VmExit& exit) override;

   private:
    ApRunner& runner_;
  };

  struct Ap {
    int index = 0;  // the vCPU id
    KvmVcpu* vcpu = nullptr;
    std::unique_ptr<KvmBackend> backend;
    ExitLedger ledger;
    std::atomic<bool> done{false};
    bool entered = false;  // left UNINITIALIZED at least once (a guest exit came back)
  };

  void Loop(Ap& ap);
  // An AP's exit; false when the AP's loop ends.
  bool Dispatch(Ap& ap, VmExit& exit);
  void EndRun(Ap& ap, Outcome outcome, int exit_code, std::string diagnosis);

  Bus& bus_;
  Backend& bsp_;
  std::function<std::string(const CpuLocation&)> describe_;
  std::optional<SandboxPolicy> sandbox_;
  std::vector<std::unique_ptr<Ap>> aps_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ended_{false};   // an AP ended the run
  std::atomic<bool> bsp_killed_{false};
  std::mutex end_mutex_;
  std::optional<End> end_;
  std::vector<int> never_started_;
  StopBsp interceptor_{*this};
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_AP_RUNNER_H_
