#include "vmm/run/exit_classifier.h"

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

ExitClass RunFailed(Outcome outcome, std::string diagnosis) {
  return ExitClass{.verdict = RunVerdict::kRunFailed,
                   .outcome = outcome,
                   .diagnosis = std::move(diagnosis)};
}

}  // namespace

ExitClass ClassifyExit(const VmExit& exit) {
  switch (exit.kind) {
    case ExitKind::kIo:
    case ExitKind::kMmio:
    case ExitKind::kMsr: return ExitClass{.device_access = true};
    case ExitKind::kShutdown:
      return RunFailed(Outcome::kTripleFault,
                       "the guest triple-faulted (an exception it could not handle)");
    case ExitKind::kInternalError:
      return RunFailed(Outcome::kEmulationFailure,
                       absl::StrFormat("KVM could not emulate a guest instruction (internal error, "
                                       "suberror %d)",
                                       exit.raw_detail));
    case ExitKind::kFailEntry:
      return RunFailed(
          Outcome::kEntryFailure,
          absl::StrFormat("KVM refused to enter the guest (hardware reason %#x)", exit.raw_detail));
    case ExitKind::kInterrupted: return ExitClass{};  // a stray kick
    // The window the backend asked for to inject an interrupt (an interceptor that asks
    // for one itself, the fault injector, takes its own first): the next entry injects.
    case ExitKind::kIrqWindowOpen: return ExitClass{};
    case ExitKind::kHalt:
      if (exit.halt_waits_for_interrupt) return ExitClass{};
      return RunFailed(
          Outcome::kUnexpectedExit,
          "the guest halted with nothing to wake it (hlt without an interrupt source)");
    default:
      return RunFailed(Outcome::kUnexpectedExit,
                       absl::StrFormat("unhandled VM exit '%s' (KVM reason %d)",
                                       ExitKindName(exit.kind), exit.raw_reason));
  }
}

ExitKey ExitKeyOf(const VmExit& exit) {
  switch (exit.kind) {
    case ExitKind::kIo:
    case ExitKind::kMmio:
    case ExitKind::kMsr:
      return ExitKey{.kind = exit.kind,
                     .detail = ExitKey::Detail::kAccess,
                     .is_write = exit.is_write,
                     .value = exit.address};
    case ExitKind::kInternalError:
      return ExitKey{
          .kind = exit.kind, .detail = ExitKey::Detail::kSuberror, .value = exit.raw_detail};
    default: return ExitKey{.kind = exit.kind};
  }
}

}  // namespace sigvisor
