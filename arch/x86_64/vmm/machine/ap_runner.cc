#include "arch/x86_64/vmm/machine/ap_runner.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"
#include "vmm/base/clock.h"
#include "vmm/run/device_exit.h"
#include "vmm/run/exit_classifier.h"

namespace sigvisor::x86 {

ApRunner::ApRunner(std::vector<KvmVcpu>& aps, Bus& bus, Backend& bsp,
                   std::function<std::string(const CpuLocation&)> describe,
                   std::optional<SandboxPolicy> sandbox)
    : bus_(bus), bsp_(bsp), describe_(std::move(describe)), sandbox_(std::move(sandbox)) {
  bus_.Share();  // the devices now serve several vCPU threads
  for (size_t i = 0; i < aps.size(); ++i) {
    auto ap = std::make_unique<Ap>();
    ap->index = static_cast<int>(i + 1);
    ap->vcpu = &aps[i];
    // No stats fd: the run's KVM statistics are the BSP's.
    ap->backend = std::make_unique<KvmBackend>(aps[i], std::nullopt);
    aps_.push_back(std::move(ap));
  }
}

ApRunner::~ApRunner() { Stop(); }

void ApRunner::Start() {
  for (const std::unique_ptr<Ap>& ap : aps_) {
    Ap* one = ap.get();
    threads_.emplace_back([this, one] { Loop(*one); });
  }
}

void ApRunner::Stop() {
  if (threads_.empty()) return;
  stop_.store(true, std::memory_order_release);
  // A kick can land before the thread enters KVM_RUN (immediate_exit covers that) or
  // while it waits there for a SIPI (the signal covers that): kick until all are out.
  for (;;) {
    bool all_done = true;
    for (const std::unique_ptr<Ap>& ap : aps_) {
      if (ap->done.load(std::memory_order_acquire)) continue;
      all_done = false;
      ap->backend->Kick();
    }
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  for (const std::unique_ptr<Ap>& ap : aps_) {
    absl::StatusOr<kvm_mp_state> state = ap->vcpu->GetMpState();
    if (state.ok() && state->mp_state == KVM_MP_STATE_UNINITIALIZED && !ap->entered) {
      never_started_.push_back(ap->index);
    }
  }
}

std::optional<ApRunner::End> ApRunner::TakeEnd() {
  if (!bsp_killed_.load()) return std::nullopt;
  std::lock_guard<std::mutex> lock(end_mutex_);
  return std::move(end_);
}

ExitLedger ApRunner::ledger() const {
  ExitLedger merged;
  for (const std::unique_ptr<Ap>& ap : aps_) merged.Merge(ap->ledger);
  merged.NameAccesses([this](const ExitKey& key) { return AccessNameOf(bus_, key); });
  return merged;
}

Interception ApRunner::StopBsp::Intercept(const VmExit& exit) {
  if (exit.kind != ExitKind::kInterrupted || !runner_.ended_.load(std::memory_order_acquire)) {
    return {};
  }
  runner_.bsp_killed_.store(true);
  return Interception::RunFailed(Outcome::kKilled, "an application processor ended the run");
}

void ApRunner::EndRun(Ap& ap, Outcome outcome, int exit_code, std::string diagnosis) {
  {
    std::lock_guard<std::mutex> lock(end_mutex_);
    if (end_) return;  // the first AP to end the run is the one reported
    end_ = End{ap.index, outcome, exit_code, std::move(diagnosis)};
  }
  ended_.store(true, std::memory_order_release);
  bsp_.Kick();
}

void ApRunner::Loop(Ap& ap) {
  // SIGINT and SIGTERM go to another thread, as with the BSP's loop (session.cc):
  // their handlers make calls the sandbox refuses.
  sigset_t interrupts;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &interrupts, nullptr);
  if (sandbox_) {
    if (absl::Status s = InstallRunLoopSandbox(*sandbox_); !s.ok()) {
      EndRun(ap, Outcome::kHostError, 1,
             absl::StrFormat("vCPU %d: could not install the seccomp sandbox: %s", ap.index,
                             s.message()));
      ap.done.store(true, std::memory_order_release);
      return;
    }
  }
  while (!stop_.load(std::memory_order_acquire)) {
    absl::StatusOr<VmExit> exit = ap.backend->Run();
    const uint64_t exit_ns = MonotonicNs();
    if (!exit.ok()) {
      EndRun(ap, Outcome::kHostError, 1,
             absl::StrFormat("vCPU %d: %s", ap.index, exit.status().message()));
      break;
    }
    if (exit->kind == ExitKind::kInterrupted) continue;  // a kick, or woken by a SIPI
    ap.entered = true;
    const bool keep_going = Dispatch(ap, *exit);
    // As the Session's loop: the handling up to here, nothing formatted in it.
    ap.ledger.Record(ExitKeyOf(*exit), MonotonicNs() - exit_ns);
    if (!keep_going) break;
  }
  ap.done.store(true, std::memory_order_release);
}

bool ApRunner::Dispatch(Ap& ap, VmExit& exit) {
  auto fail = [&](Outcome outcome, std::string what) {
    if (outcome != Outcome::kHostError && describe_) {
      absl::StatusOr<CpuLocation> where = ap.backend->Locate();
      if (where.ok()) what += " at " + describe_(*where);
    }
    EndRun(ap, outcome, 1, absl::StrFormat("vCPU %d: %s", ap.index, what));
    return false;
  };
  ExitClass what = ClassifyExit(exit);
  if (!what.device_access) {
    switch (what.verdict) {
      case RunVerdict::kContinue: return true;
      case RunVerdict::kGuestEnded:  // not the classifier's to say
      case RunVerdict::kRunFailed: return fail(what.outcome, std::move(what.diagnosis));
    }
  }
  DeviceExitResult result = DispatchDeviceExit(bus_, exit);
  switch (result.verdict) {
    case RunVerdict::kRunFailed: return fail(result.outcome, std::move(result.diagnosis));
    case RunVerdict::kGuestEnded:  // isa-debug-exit or the reset line from an AP
      if (result.reset) {
        return fail(Outcome::kReboot, "the guest reset the machine");
      }
      EndRun(ap, Outcome::kExited, 0, "");
      return false;
    case RunVerdict::kContinue: return true;
  }
  return true;
}

}  // namespace sigvisor::x86
