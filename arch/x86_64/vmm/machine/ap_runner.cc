#include "arch/x86_64/vmm/machine/ap_runner.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/base/clock.h"
#include "vmm/run/device_exit.h"
#include "vmm/run/exit_classifier.h"

namespace sigvisor::x86 {

ApRunner::ApRunner(std::vector<KvmVcpu>& aps, Bus& bus, Backend& bsp,
                   std::function<std::string(const CpuLocation&)> describe,
                   std::optional<SandboxPolicy> sandbox, StartMode mode)
    : bus_(bus),
      bsp_(bsp),
      describe_(std::move(describe)),
      sandbox_(std::move(sandbox)),
      mode_(mode) {
  bus_.Share();  // the devices now serve several vCPU threads
  for (size_t i = 0; i < aps.size(); ++i) {
    auto ap = std::make_unique<Ap>();
    ap->index = static_cast<int>(i + 1);
    ap->vcpu = &aps[i];
    // Each AP's own statistics, as vCPU 0's (a host without the fd: none, empty).
    std::optional<StatsFd> stats;
    if (absl::StatusOr<StatsFd> opened = aps[i].OpenStats(); opened.ok()) {
      stats = *std::move(opened);
    }
    ap->backend = std::make_unique<KvmBackend>(aps[i], std::move(stats));
    aps_.push_back(std::move(ap));
  }
}

ApRunner::~ApRunner() { Stop(); }

void ApRunner::UseVmmLapics(LocalApics& apics) {
  for (const std::unique_ptr<Ap>& ap : aps_) ap->backend->UseVmmLapic(apics, ap->index);
}

void ApRunner::Start() {
  for (const std::unique_ptr<Ap>& ap : aps_) {
    if (absl::StatusOr<StatsSnapshot> now = ap->backend->ReadStats(); now.ok()) {
      ap->stats_at_start = *std::move(now);
    }
  }
  for (const std::unique_ptr<Ap>& ap : aps_) {
    Ap* one = ap.get();
    threads_.emplace_back([this, one] { Loop(*one); });
  }
}

void ApRunner::Stop() {
  std::lock_guard<std::mutex> stopping(stop_mutex_);
  if (threads_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(start_mutex_);
    stop_.store(true, std::memory_order_release);
  }
  start_cv_.notify_all();  // the APs still waiting for their start (kHypercall)
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
    if (absl::StatusOr<StatsSnapshot> now = ap->backend->ReadStats(); now.ok()) {
      ap->stats_at_stop = *std::move(now);
    }
    bool ran = ap->entered;
    if (mode_ == StartMode::kHypercall) {
      ran = ap->started;
    } else {
      absl::StatusOr<kvm_mp_state> state = ap->vcpu->GetMpState();
      ran = !(state.ok() && state->mp_state == KVM_MP_STATE_UNINITIALIZED && !ap->entered);
    }
    if (!ran) {
      never_started_.push_back(ap->index);
      continue;
    }
    // Out of KVM_RUN and joined: its registers can be read from here.
    absl::StatusOr<CpuLocation> where = ap->backend->Locate();
    if (!where.ok()) continue;
    std::string location =
        absl::StrFormat("vCPU %d: %s", ap->index,
                        describe_ ? describe_(*where) : absl::StrFormat("rip %#x", where->pc));
    if (std::string interrupts = ap->backend->DescribeInterrupts(); !interrupts.empty()) {
      absl::StrAppend(&location, " (", interrupts, ")");
    }
    locations_.push_back(std::move(location));
  }
}

absl::Status ApRunner::StartAp(int index, const ApEntry& entry) {
  if (mode_ != StartMode::kHypercall) {
    return absl::FailedPreconditionError(
        absl::StrFormat("vCPU %d waits for INIT/SIPI, not for a start call", index));
  }
  if (index < 1 || index > static_cast<int>(aps_.size())) {
    return absl::FailedPreconditionError(absl::StrFormat("no vCPU %d to start", index));
  }
  Ap& ap = *aps_[index - 1];
  {
    std::lock_guard<std::mutex> lock(start_mutex_);
    if (stop_.load(std::memory_order_acquire)) {
      return absl::FailedPreconditionError("the machine is stopping");
    }
    if (ap.started) {
      return absl::FailedPreconditionError(absl::StrFormat("vCPU %d was started already", index));
    }
    ap.entry = entry;
    ap.started = true;
  }
  start_cv_.notify_all();
  return absl::OkStatus();
}

int ApRunner::CallingVcpu() const {
  const std::thread::id me = std::this_thread::get_id();
  for (const std::unique_ptr<Ap>& ap : aps_) {
    if (ap->thread_id.load(std::memory_order_acquire) == me) return ap->index;
  }
  return 0;
}

std::vector<VcpuSample> ApRunner::Sample() const {
  std::vector<VcpuSample> samples;
  samples.reserve(aps_.size());
  for (const std::unique_ptr<Ap>& ap : aps_) {
    VcpuSample sample;
    sample.vcpu = ap->index;
    {
      std::lock_guard<std::mutex> lock(ap->ledger_mutex);
      sample.exits = ap->counted;
    }
    // One pread of the AP's stats fd: safe beside its KVM_RUN.
    if (absl::StatusOr<StatsSnapshot> now = ap->backend->ReadStats(); now.ok()) {
      sample.kvm_stats = *std::move(now);
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::optional<ApRunner::End> ApRunner::TakeEnd() {
  if (!bsp_killed_.load()) return std::nullopt;
  std::lock_guard<std::mutex> lock(end_mutex_);
  return std::move(end_);
}

ExitLedger ApRunner::ledger() const {
  ExitLedger merged;
  for (const std::unique_ptr<Ap>& ap : aps_) {
    std::lock_guard<std::mutex> lock(ap->ledger_mutex);
    merged.Merge(ap->ledger);
  }
  merged.NameAccesses([this](const ExitKey& key) { return AccessNameOf(bus_, key); });
  return merged;
}

std::vector<std::pair<int, ExitLedger>> ApRunner::per_vcpu_ledgers() const {
  std::vector<std::pair<int, ExitLedger>> ledgers;
  for (const std::unique_ptr<Ap>& ap : aps_) {
    ExitLedger copy;
    {
      std::lock_guard<std::mutex> lock(ap->ledger_mutex);
      copy = ap->ledger;
    }
    copy.NameAccesses([this](const ExitKey& key) { return AccessNameOf(bus_, key); });
    ledgers.emplace_back(ap->index, std::move(copy));
  }
  return ledgers;
}

std::vector<std::pair<int, StatsSnapshot>> ApRunner::final_stats() const {
  std::vector<std::pair<int, StatsSnapshot>> stats;
  for (const std::unique_ptr<Ap>& ap : aps_) {
    stats.emplace_back(ap->index, SubtractStats(ap->stats_at_stop, ap->stats_at_start));
  }
  return stats;
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

bool ApRunner::AwaitEntry(Ap& ap) {
  std::optional<ApEntry> entry;
  {
    std::unique_lock<std::mutex> lock(start_mutex_);
    start_cv_.wait(lock, [&] { return stop_.load(std::memory_order_acquire) || ap.entry; });
    if (stop_.load(std::memory_order_acquire)) return false;
    entry = ap.entry;
  }
  // vCPU ioctls on the vCPU's own thread.
  if (absl::Status s = EnterAp(*ap.vcpu, *entry); !s.ok()) {
    EndRun(ap, Outcome::kHostError, 1,
           absl::StrFormat("vCPU %d: entering its start state: %s", ap.index, s.message()));
    return false;
  }
  return true;
}

void ApRunner::Loop(Ap& ap) {
  ap.thread_id.store(std::this_thread::get_id(), std::memory_order_release);
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
  if (mode_ == StartMode::kHypercall && !AwaitEntry(ap)) {
    ap.done.store(true, std::memory_order_release);
    return;
  }
  while (!stop_.load(std::memory_order_acquire)) {
    absl::StatusOr<VmExit> exit = ap.backend->Run();
    const uint64_t exit_ns = MonotonicNs();
    if (!exit.ok()) {
      EndRun(ap, Outcome::kHostError, 1,
             absl::StrFormat("vCPU %d: %s", ap.index, exit.status().message()));
      break;
    }
    // Before the AP ran (a SIPI's wake-up) and at the machine's stop a kick is not the
    // guest's; while it runs, one is the VMM's local APIC getting an IPI to it (--lapic
    // vmm), an exit the IPI cost, counted as vCPU 0's are.
    if (exit->kind == ExitKind::kInterrupted &&
        (!ap.entered || stop_.load(std::memory_order_acquire))) {
      continue;
    }
    ap.entered = true;
    const ExitKey key = ExitKeyOf(*exit);
    {
      // The reason's name is a static string: this allocates only for a reason's first exit.
      std::lock_guard<std::mutex> lock(ap.ledger_mutex);
      const std::string_view reason = ExitKindName(key.kind);
      auto it = ap.counted.find(reason);
      if (it == ap.counted.end()) it = ap.counted.emplace(std::string(reason), 0).first;
      ++it->second;
    }
    const bool keep_going = Dispatch(ap, *exit);
    // As the Session's loop: the handling up to here, nothing formatted in it.
    const uint64_t handle_ns = MonotonicNs() - exit_ns;
    {
      std::lock_guard<std::mutex> lock(ap.ledger_mutex);
      ap.ledger.Record(key, handle_ns);
    }
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
  // A call through the gate that ends the run (exit, panic) ends it with its own
  // outcome, code and words; the others an AP may make go on.
  bool ended_by_call = false;
  auto take = [&](HypercallResult& call) {
    if (call.verdict != RunVerdict::kGuestEnded) return RunVerdict::kContinue;
    ended_by_call = true;
    EndRun(ap, call.outcome, call.exit_code,
           call.diagnosis.empty() ? std::string()
                                  : absl::StrFormat("vCPU %d: %s", ap.index, call.diagnosis));
    return RunVerdict::kGuestEnded;
  };
  DeviceExitResult result = gate_ != nullptr ? DispatchDeviceExit(bus_, exit, gate_, take)
                                             : DispatchDeviceExit(bus_, exit);
  switch (result.verdict) {
    case RunVerdict::kRunFailed: return fail(result.outcome, std::move(result.diagnosis));
    case RunVerdict::kGuestEnded:  // isa-debug-exit, the reset line or a call from an AP
      if (ended_by_call) return false;
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
