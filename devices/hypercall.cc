#include "devices/hypercall.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

static_assert(SIGVISOR_HC_COUNT - 1 + 4 <= HypercallDevice::kPortCount,
              "the last hypercall's 4-byte access must fit the device's ports");

// A fixed-size name field from the guest: up to the first NUL, at most N bytes.
template <size_t N>
std::string BoundedName(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

}  // namespace

std::string_view HypercallDevice::CallName(uint64_t nr) {
  switch (nr) {
    case SIGVISOR_HC_CONSOLE_WRITE: return "console_write";
    case SIGVISOR_HC_EXIT: return "exit";
    case SIGVISOR_HC_PHASE_BEGIN: return "phase_begin";
    case SIGVISOR_HC_EVENT: return "event";
    case SIGVISOR_HC_PHASE_END: return "phase_end";
    case SIGVISOR_HC_TIME_REPORT: return "time_report";
    case SIGVISOR_HC_PANIC: return "panic";
    default: return "unknown";
  }
}

absl::StatusOr<DeviceAction> HypercallDevice::Read(uint64_t, std::span<uint8_t> data) {
  std::fill(data.begin(), data.end(), 0xff);
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> HypercallDevice::Write(uint64_t nr, std::span<const uint8_t> data) {
  if (data.size() != 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "hypercall %d (%s): %d-byte write; the ABI takes a 4-byte argument address", nr,
        CallName(nr), data.size()));
  }
  uint32_t args_gpa;
  std::memcpy(&args_gpa, data.data(), sizeof(args_gpa));
  auto bad_args = [&](const absl::Status& s) {
    return absl::InvalidArgumentError(absl::StrFormat("hypercall %s: bad argument block at %#x: %s",
                                                      CallName(nr), args_gpa, s.message()));
  };

  switch (nr) {
    case SIGVISOR_HC_CONSOLE_WRITE: {
      auto args = memory_.ReadObject<sigvisor_hc_console_write>(args_gpa);
      if (!args.ok()) return bad_args(args.status());
      const uint64_t len = std::min<uint64_t>(args->len, SIGVISOR_CONSOLE_MAX_WRITE);
      auto bytes = memory_.Span(args->data_gpa, len);
      if (!bytes.ok()) return bad_args(bytes.status());
      handler_.OnConsoleWrite(
          std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
      return DeviceAction::kContinue;
    }
    case SIGVISOR_HC_EXIT: {
      auto args = memory_.ReadObject<sigvisor_hc_exit>(args_gpa);
      if (!args.ok()) return bad_args(args.status());
      handler_.OnExit(args->status);
      return DeviceAction::kStop;
    }
    case SIGVISOR_HC_PHASE_BEGIN: {
      auto args = memory_.ReadObject<sigvisor_hc_phase_begin>(args_gpa);
      if (!args.ok()) return bad_args(args.status());
      if (args->flags & ~uint32_t{SIGVISOR_PHASE_CALIBRATION}) {
        return absl::InvalidArgumentError(
            absl::StrFormat("hypercall phase_begin: unknown flags %#x", args->flags));
      }
      handler_.OnPhaseBegin(BoundedName(args->name), args->ops, args->tsc,
                            (args->flags & SIGVISOR_PHASE_CALIBRATION) != 0,
                            args->op_syscall_plus1 ? std::optional<uint64_t>(args->op_syscall_plus1 - 1)
                                                   : std::nullopt);
      return DeviceAction::kContinue;
    }
    case SIGVISOR_HC_PHASE_END: {
      auto args = memory_.ReadObject<sigvisor_hc_phase_end>(args_gpa);
      if (!args.ok()) return bad_args(args.status());
      handler_.OnPhaseEnd(args->tsc);
      return DeviceAction::kContinue;
    }
    case SIGVISOR_HC_TIME_REPORT: {
      auto args = memory_.ReadObject<sigvisor_hc_time_report>(args_gpa);
      if (!args.ok()) return bad_args(args.status());
      handler_.OnTimeReport(BoundedName(args->name), args->tsc_cycles, args->count);
      return DeviceAction::kContinue;
    }
    case SIGVISOR_HC_PANIC: {
      auto args = memory_.ReadObject<sigvisor_hc_panic>(args_gpa);
      if (!args.ok()) return bad_args(args.status());
      constexpr uint64_t kMaxPanicMessage = 512;
      auto text = memory_.Span(args->message_gpa,
                               std::min<uint64_t>(args->message_len, kMaxPanicMessage));
      std::string message = text.ok() ? std::string(reinterpret_cast<const char*>(text->data()),
                                                    text->size())
                                      : "(message not readable)";
      handler_.OnPanic(std::move(message), args->rip, args->vector);
      return DeviceAction::kStop;
    }
    case SIGVISOR_HC_EVENT: {
      // Fault-injection outcomes: the injector (arch/x86_64/vmm/fault_injector) takes
      // them before they get here; without one they are checked and dropped.
      auto args = memory_.ReadObject<sigvisor_hc_event>(args_gpa);
      if (!args.ok()) return bad_args(args.status());
      return DeviceAction::kContinue;
    }
    default:
      return absl::InvalidArgumentError(absl::StrFormat(
          "unknown hypercall %d (this VMM speaks sigvisor ABI %d)", nr, SIGVISOR_ABI_VERSION));
  }
}

}  // namespace sigvisor
