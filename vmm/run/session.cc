#include "vmm/run/session.h"

#include <pthread.h>
#include <signal.h>

#include <thread>

#include "absl/strings/str_format.h"
#include "vmm/base/clock.h"
#include "vmm/ledger/exit_ledger.h"
#include "vmm/run/device_exit.h"
#include "vmm/run/exit_classifier.h"
#include "vmm/run/watchdog.h"

namespace sigvisor {
namespace {

// The exit code a run reports when the guest did not choose one.
constexpr int kFailureExitCode = 1;

}  // namespace

Session::Session(Backend& backend, Bus& bus, SessionOptions options)
    : backend_(backend),
      bus_(bus),
      options_(std::move(options)),
      phases_(options_.guest_tsc_khz) {}

uint64_t Session::SinceStart() const { return MonotonicNs() - start_ns_; }

bool Session::StartInterceptors() {
  interceptors_start_ns_ = MonotonicNs();
  for (ExitInterceptor* interceptor : options_.interceptors) {
    if (interceptor == nullptr) continue;
    if (absl::Status s = interceptor->OnStart(); !s.ok()) {
      if (s.code() == absl::StatusCode::kDeadlineExceeded ||
          s.code() == absl::StatusCode::kAborted) {
        // The run's --timeout passed, or SIGINT/SIGTERM came, while an interceptor
        // waited (a debugger for its client): the guest never ran, so no location.
        result_.outcome =
            s.code() == absl::StatusCode::kAborted ? Outcome::kInterrupted : Outcome::kTimeout;
        result_.exit_code = kFailureExitCode;
        result_.diagnosis = std::string(s.message());
        return false;
      }
      // Cancelled: a debugger killed the guest before it ran.
      Fail(s.code() == absl::StatusCode::kCancelled ? Outcome::kKilled : Outcome::kHostError,
           std::string(s.message()));
      return false;
    }
  }
  return true;
}

RunResult Session::Run() {
  absl::StatusOr<StatsSnapshot> stats_at_start = backend_.ReadStats();
  if (!stats_at_start.ok()) {
    Fail(Outcome::kHostError, std::string(stats_at_start.status().message()));
    return std::move(result_);
  }
  stats_at_start_ = *stats_at_start;
  // The interceptors start on the thread that runs the loop, once its sandbox is in:
  // a thread one of them starts (the gdb stub's interrupt watcher) inherits the filter.
  bool started = false;
  auto start_and_run = [&] {
    started = StartInterceptors();
    if (started) RunLoop();
  };
  if (options_.sandbox) {
    // The loop runs on a thread of its own so the filter ends with it; KVM_RUN may be
    // issued from any thread (the backend kicks whichever thread runs it).
    absl::Status installed;
    std::thread run_loop([&] {
      // SIGINT and SIGTERM go to another thread (the one that waits for this one): their
      // handlers (`run`'s, bench's) make calls the filter refuses. Threads started
      // here (the watchdog) inherit the mask.
      sigset_t interrupts;
      sigemptyset(&interrupts);
      sigaddset(&interrupts, SIGINT);
      sigaddset(&interrupts, SIGTERM);
      pthread_sigmask(SIG_BLOCK, &interrupts, nullptr);
      installed = InstallRunLoopSandbox(*options_.sandbox);
      if (!installed.ok()) return;
      result_.sandbox = SandboxDescription(true, *options_.sandbox);
      if (options_.sandboxed_hook) options_.sandboxed_hook();
      start_and_run();
    });
    run_loop.join();
    if (!installed.ok()) {
      Fail(Outcome::kHostError,
           absl::StrFormat("could not install the seccomp sandbox (--no-sandbox runs without "
                           "it): %s",
                           installed.message()));
      return Finish();
    }
  } else {
    start_and_run();
  }
  if (!started) return Finish();
  CollectGuestCountedTraps();
  result_.run_ns = SinceStart();
  absl::StatusOr<StatsSnapshot> stats_at_end = backend_.ReadStats();
  if (stats_at_end.ok()) result_.kvm_stats = SubtractStats(*stats_at_end, *stats_at_start);
  if (phases_.open()) {
    result_.warnings.push_back(
        result_.complete() ? "the run ended inside a phase; it is not reported"
                           : "the run ended inside a phase; it is not reported (the phases "
                             "reported are those that ended before the failure)");
  }
  result_.phases = phases_.results();
  return Finish();
}

void Session::RunLoop() {
  start_ns_ = MonotonicNs();
  {
    // --timeout covers the interceptors' start (a debugger's wait for its client) too.
    absl::Duration timeout = options_.timeout;
    if (timeout != absl::InfiniteDuration() && interceptors_start_ns_ != 0) {
      timeout -= absl::Nanoseconds(start_ns_ - interceptors_start_ns_);
    }
    Watchdog watchdog(backend_, timeout, options_.interrupt);
    for (;;) {
      absl::StatusOr<VmExit> exit = backend_.Run();
      const uint64_t exit_ns = MonotonicNs();
      if (!exit.ok()) {
        Fail(Outcome::kHostError, std::string(exit.status().message()));
        break;
      }
      if (exit->kind == ExitKind::kInterrupted && watchdog.interrupted()) {
        result_.ledger.Record(exit->kind, "interrupt", MonotonicNs() - exit_ns);
        Fail(Outcome::kInterrupted,
             "SIGINT or SIGTERM stopped the run before the guest exited (the report "
             "covers what ran until then)");
        break;
      }
      if (exit->kind == ExitKind::kInterrupted && watchdog.fired()) {
        result_.ledger.Record(exit->kind, "watchdog", MonotonicNs() - exit_ns);
        Fail(Outcome::kTimeout,
             absl::StrFormat("the guest ran past the %s timeout (raise it with --timeout)",
                             absl::FormatDuration(options_.timeout)));
        break;
      }
      HandledExit handled;
      const bool keep_going = Dispatch(*exit, handled);
      // The exit table's latency: the VMM's handling of the exit, from Run()
      // returning it (KVM_RUN back and kvm_run read into a VmExit) to here: the
      // interceptors' turn, the classification and the device's or hypercall
      // owner's work (bus lookup included). Not in it: the END marker's sample
      // below, the ledger's own record, the observers, the BEGIN marker's sample and
      // the re-entry. Nothing is formatted inside it (the ledger keys the exit and
      // names it after the run), and an interceptor's words are views of texts it
      // keeps (exit_interceptor.h).
      const uint64_t handle_ns = MonotonicNs() - exit_ns;
      for (PendingEnd& end : pending_ends_) EndPhase(std::move(end));
      pending_ends_.clear();
      // An instrument's own exits (a step it asked for, the injector's reports) stay
      // out of the ledger.
      if (!handled.instrument) {
        if (handled.intercepted) {
          result_.ledger.Record(exit->kind, handled.text, handle_ns);
        } else {
          result_.ledger.Record(ExitKeyOf(*exit), handle_ns);
        }
      }
      Notify(*exit, handled);
      if (!keep_going) break;
      if (pending_begin_) {
        // BEGIN is sampled just before re-entry, after its own exit was counted by
        // both KVM and the ledger, so neither marker's exit lands in the phase.
        absl::Status s =
            phases_.Begin(pending_begin_->name, pending_begin_->ops,
                          Sample(pending_begin_->guest_tsc, std::move(pending_begin_->guest_ipis)),
                          pending_begin_->calibration);
        if (!s.ok()) AddWarning(std::string(s.message()));
        pending_begin_.reset();
      }
    }
  }
}

RunResult Session::Finish() {
  // The ledger's accesses get their devices' names while the bus is still there.
  result_.ledger.NameAccesses([this](const ExitKey& key) { return AccessNameOf(bus_, key); });
  const RunEnd end{result_.outcome, result_.exit_code, result_.diagnosis};
  for (ExitInterceptor* interceptor : options_.interceptors) {
    if (interceptor == nullptr) continue;
    interceptor->OnEnd(end);
    // The VMM's own warnings, not the guest's: not capped.
    for (std::string& warning : interceptor->Warnings()) {
      result_.warnings.push_back(std::move(warning));
    }
  }
  return std::move(result_);
}

void Session::Notify(const VmExit& exit, const HandledExit& handled) {
  std::vector<PhaseMarker> markers = std::move(pending_markers_);
  pending_markers_.clear();
  auto detail = [&]() -> std::string {
    if (handled.intercepted) return std::string(handled.text);
    const ExitKey key = ExitKeyOf(exit);
    return ExitDetail(
        key, key.detail == ExitKey::Detail::kAccess ? AccessNameOf(bus_, key) : "", "");
  };
  const ObservedExit observed{exit, detail, handled.trap ? &*handled.trap : nullptr,
                              handled.instrument};
  for (ExitInterceptor* interceptor : options_.interceptors) {
    if (interceptor == nullptr) continue;
    interceptor->Observe(observed);
    for (const PhaseMarker& marker : markers) interceptor->OnPhaseMarker(marker);
  }
}

bool Session::Fail(Outcome outcome, std::string what) {
  result_.outcome = outcome;
  result_.exit_code = kFailureExitCode;
  result_.diagnosis = std::move(what);
  if (outcome != Outcome::kHostError && options_.describe) {
    absl::StatusOr<CpuLocation> where = backend_.Locate();
    if (where.ok() && where->reset_by_host) {
      result_.diagnosis +=
          "; the host's KVM reset the vCPU at the shutdown (AMD SVM does), so where the "
          "guest was is not known";
    } else if (where.ok()) {
      result_.diagnosis += " at " + options_.describe(*where);
      // A guest that stopped making progress: was it waiting for an interrupt?
      if (outcome == Outcome::kTimeout) {
        if (std::string interrupts = backend_.DescribeInterrupts(); !interrupts.empty()) {
          result_.diagnosis += " (" + interrupts + ")";
        }
      }
    }
  }
  return false;
}

std::optional<bool> Session::Intercept(const VmExit& exit, HandledExit& handled) {
  for (ExitInterceptor* interceptor : options_.interceptors) {
    if (interceptor == nullptr) continue;
    Interception seen = interceptor->Intercept(exit);
    if (!seen.verdict) continue;
    handled.intercepted = true;
    handled.text = seen.detail;
    switch (*seen.verdict) {
      case RunVerdict::kContinue:
        handled.instrument = seen.instrument;
        if (seen.trap) {
          result_.traps.Record(seen.trap->kind, seen.trap->address, seen.trap->site);
          handled.trap = std::move(seen.trap);
        }
        result_.traps.AddDrLoads(seen.dr_loads);
        result_.traps.AddHypercalls(seen.trap_hypercalls);
        return true;
      case RunVerdict::kGuestEnded:  // not an interceptor's to say (exit_interceptor.h)
      case RunVerdict::kRunFailed:
        if (seen.outcome == Outcome::kKilled) {
          // The mechanism's decision, not the guest's doing: where the guest was says
          // nothing about it.
          result_.outcome = Outcome::kKilled;
          result_.exit_code = kFailureExitCode;
          result_.diagnosis = std::move(seen.diagnosis);
          return false;
        }
        return Fail(seen.outcome, std::move(seen.diagnosis));
    }
  }
  return std::nullopt;
}

bool Session::Dispatch(VmExit& exit, HandledExit& handled) {
  if (std::optional<bool> intercepted = Intercept(exit, handled)) return *intercepted;
  ExitClass what = ClassifyExit(exit);
  if (what.device_access) return DispatchDeviceExit(exit, handled.instrument);
  switch (what.verdict) {
    case RunVerdict::kContinue: return true;  // a stray kick; the watchdog has not fired
    case RunVerdict::kGuestEnded:             // not the classifier's to say
    case RunVerdict::kRunFailed: return Fail(what.outcome, std::move(what.diagnosis));
  }
  return true;
}

bool Session::DispatchDeviceExit(VmExit& exit, bool& instrument) {
  DeviceExitResult result = sigvisor::DispatchDeviceExit(
      bus_, exit, options_.hypercalls, [&](HypercallResult& call) {
        instrument = call.instrument;
        return TakeHypercall(call);
      });
  switch (result.verdict) {
    case RunVerdict::kRunFailed: return Fail(result.outcome, std::move(result.diagnosis));
    case RunVerdict::kGuestEnded:
      if (result.reset) {
        // Formatted only now that the run is over: "port 0x64 out (i8042 command)".
        const ExitKey key = ExitKeyOf(exit);
        return Fail(Outcome::kReboot, "the guest reset the machine: " +
                                          ExitDetail(key, AccessNameOf(bus_, key), ""));
      }
      break;
    case RunVerdict::kContinue:
      if (!stop_requested_) return true;
      break;
  }
  if (result_.outcome == Outcome::kHostError) {  // a device stopped without a hypercall
    result_.outcome = Outcome::kExited;
  }
  return false;
}

void Session::CollectGuestCountedTraps() {
  for (ExitInterceptor* interceptor : options_.interceptors) {
    if (interceptor == nullptr) continue;
    for (const TrapBatch& batch : interceptor->CollectTraps()) {
      result_.traps.Record(batch.kind, batch.address, batch.site, batch.count);
    }
  }
}

PhaseSample Session::Sample(uint64_t guest_tsc, GuestIpiCounts guest_ipis) {
  CollectGuestCountedTraps();  // a pv guest's own counts up to this boundary
  PhaseSample sample;
  sample.exits = result_.ledger.Counts();
  for (auto& [reason, stats] : result_.ledger.by_reason())
    sample.exit_latency.emplace(reason, stats);
  sample.traps = result_.traps.tally();
  absl::StatusOr<StatsSnapshot> stats = backend_.ReadStats();
  if (stats.ok()) sample.kvm_stats = std::move(*stats);
  sample.wall_ns = MonotonicNs();
  sample.guest_tsc = guest_tsc;
  sample.guest_ipis = std::move(guest_ipis);
  if (options_.sample_other_vcpus) sample.other_vcpus = options_.sample_other_vcpus();
  return sample;
}

void Session::NoteHypercall() {
  if (result_.first_hypercall_ns != 0) return;
  result_.first_hypercall_ns = SinceStart();
  if (absl::StatusOr<StatsSnapshot> now = backend_.ReadStats(); now.ok()) {
    result_.boot_kvm_stats = SubtractStats(*now, stats_at_start_);
  }
}

void Session::AddWarning(std::string warning) {
  // A guest can trigger warnings at will (time reports, unbalanced markers): cap them.
  constexpr size_t kMaxWarnings = 64;
  if (result_.warnings.size() < kMaxWarnings) {
    result_.warnings.push_back(std::move(warning));
  } else {
    ++result_.warnings_dropped;
  }
}

void Session::ConsoleWrite(std::string_view text) {
  NoteHypercall();
  const uint64_t streamed_room =
      options_.max_output_bytes - std::min(options_.max_output_bytes, result_.console_bytes);
  result_.console_bytes += text.size();
  if (text.size() > streamed_room) {
    if (result_.console_dropped_bytes == 0) {
      AddWarning(absl::StrFormat(
          "the guest's console output reached the --max-output limit (%d bytes); the rest "
          "was dropped",
          options_.max_output_bytes));
    }
    result_.console_dropped_bytes += text.size() - streamed_room;
    text = text.substr(0, streamed_room);
  }
  if (options_.console_sink && !text.empty()) options_.console_sink(text);
  const size_t room = options_.max_console_bytes - std::min(options_.max_console_bytes,
                                                            result_.console.size());
  if (text.size() > room) result_.console_truncated = true;
  result_.console.append(text.substr(0, room));
}

RunVerdict Session::TakeHypercall(HypercallResult& call) {
  const bool ends = call.verdict == RunVerdict::kGuestEnded;
  // The guest's first call of its own (not an instrument's report) ends its boot: the
  // bundled kernel's is its orders call (SIGVISOR_HC_ORDERS), at its quiescent point.
  if (!call.instrument) NoteHypercall();
  if (!call.warning.empty()) AddWarning(std::move(call.warning));
  if (call.marker && call.marker->begin) {
    pending_begin_ = PendingBegin{call.marker->name, call.marker->ops, call.guest_tsc,
                                  call.marker->calibration, call.marker->guest_ipis};
    pending_markers_.push_back(*std::move(call.marker));
  } else if (call.marker) {
    // Sampled once the exit's handling time is taken, before its ledger record, so
    // the END marker's exit stays out of the phase and its sample out of the time.
    pending_ends_.push_back(PendingEnd{call.guest_tsc, call.marker->guest_ipis});
  }
  if (!ends) return RunVerdict::kContinue;
  result_.outcome = call.outcome;
  result_.exit_code = call.exit_code;
  result_.diagnosis = std::move(call.diagnosis);
  if (call.guest_pc && options_.describe) {
    CpuLocation where;
    where.pc = *call.guest_pc;
    where.cpl = 0;
    if (absl::StatusOr<CpuLocation> now = backend_.Locate(); now.ok()) {
      where.page_table_root = now->page_table_root;
    }
    result_.diagnosis += " at " + options_.describe(where);
  }
  stop_requested_ = true;
  return RunVerdict::kGuestEnded;
}

void Session::EndPhase(PendingEnd end) {
  const size_t phases_before = phases_.results().size();
  absl::Status s = phases_.End(Sample(end.guest_tsc, std::move(end.guest_ipis)));
  if (!s.ok()) AddWarning(std::string(s.message()));
  if (phases_.results().size() > phases_before) {
    for (const std::string& warning : phases_.results().back().time_warnings) AddWarning(warning);
  }
  pending_markers_.push_back(PhaseMarker{false, "", 0, false, std::nullopt});
}

}  // namespace sigvisor
