#include "vmm/run/hypercall_table.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/str_format.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

static_assert(SIGVISOR_HC_COUNT - 1 + 4 <= HypercallTable::kMaxCalls,
              "the last hypercall's 4-byte access must fit the PC port block");

absl::StatusOr<DeviceAction> AsDeviceAction(const HypercallResult& result) {
  switch (result.verdict) {
    case RunVerdict::kContinue: return DeviceAction::kContinue;
    case RunVerdict::kGuestEnded: return DeviceAction::kStop;
    case RunVerdict::kRunFailed:
      if (result.outcome == Outcome::kBadDeviceAccess) {
        return absl::InvalidArgumentError(result.diagnosis);
      }
      return DeviceAction::kStop;
  }
  return DeviceAction::kContinue;
}

}  // namespace

std::string_view HypercallName(uint64_t nr) {
  switch (nr) {
    case SIGVISOR_HC_CONSOLE_WRITE: return "console_write";
    case SIGVISOR_HC_EXIT: return "exit";
    case SIGVISOR_HC_PHASE_BEGIN: return "phase_begin";
    case SIGVISOR_HC_EVENT: return "event";
    case SIGVISOR_HC_PHASE_END: return "phase_end";
    case SIGVISOR_HC_TIME_REPORT: return "time_report";
    case SIGVISOR_HC_PANIC: return "panic";
    case SIGVISOR_HC_PV_DEBUGREG_LOAD: return "pv_debugreg_load";
    case SIGVISOR_HC_ORDERS: return "orders";
    case SIGVISOR_HC_SIGNAL_FRAME:
      return "signal_frame";
    case SIGVISOR_HC_SIGRETURN:
      return "sigreturn";
    case SIGVISOR_HC_CPU_UP:
      return "cpu_up";
    case SIGVISOR_HC_SEND_IPI:
      return "send_ipi";
    default: return "unknown";
  }
}

bool AnyVcpuMayMake(uint64_t nr) {
  return nr == SIGVISOR_HC_CONSOLE_WRITE || nr == SIGVISOR_HC_EXIT || nr == SIGVISOR_HC_PANIC ||
         nr == SIGVISOR_HC_SEND_IPI;
}

absl::Status HypercallTable::Register(uint64_t nr, Handler handler) {
  if (nr >= kMaxCalls) {
    return absl::InvalidArgumentError(
        absl::StrFormat("hypercall %d: the table has numbers 0 to %d", nr, kMaxCalls - 1));
  }
  if (handlers_[nr] != nullptr) {
    return absl::AlreadyExistsError(
        absl::StrFormat("hypercall %d (%s) has an owner already", nr, HypercallName(nr)));
  }
  handlers_[nr] = std::move(handler);
  return absl::OkStatus();
}

HypercallResult HypercallTable::Call(uint64_t nr, std::span<const uint8_t> argument) const {
  if (argument.size() != 4) {
    return HypercallResult::RunFailed(
        Outcome::kBadDeviceAccess,
        absl::StrFormat("hypercall %d (%s): %d-byte write; the ABI takes a 4-byte argument "
                        "address",
                        nr, HypercallName(nr), argument.size()));
  }
  if (!registered(nr)) {
    return HypercallResult::RunFailed(
        Outcome::kBadDeviceAccess,
        absl::StrFormat("unknown hypercall %d (this VMM speaks sigvisor ABI %d)", nr,
                        SIGVISOR_ABI_VERSION));
  }
  if (caller_ && !AnyVcpuMayMake(nr)) {
    if (const int vcpu = caller_(); vcpu != 0) {
      return HypercallResult::RunFailed(
          Outcome::kBadDeviceAccess,
          absl::StrFormat("hypercall %s from vCPU %d: only vCPU 0 makes it", HypercallName(nr),
                          vcpu));
    }
  }
  uint32_t args_gpa;
  std::memcpy(&args_gpa, argument.data(), sizeof(args_gpa));
  return handlers_[nr](args_gpa);
}

HypercallResult HypercallGate::Access(uint64_t offset, bool is_write,
                                      std::span<uint8_t> data) const {
  if (is_write) return Store(offset, data);
  std::fill(data.begin(), data.end(), 0xff);
  return HypercallResult{};
}

HypercallResult HypercallGate::Store(uint64_t offset, std::span<const uint8_t> data) const {
  if (offset % stride_ != 0) {
    return HypercallResult::RunFailed(
        Outcome::kBadDeviceAccess,
        absl::StrFormat("hypercall window: a store at offset %#x; hypercall NR is the word at "
                        "%d * NR",
                        offset, stride_));
  }
  return table_.Call(offset / stride_, data);
}

absl::StatusOr<DeviceAction> CallGate::Read(uint64_t offset, std::span<uint8_t> data) {
  return AsDeviceAction(Access(offset, false, data));
}

absl::StatusOr<DeviceAction> CallGate::Write(uint64_t offset, std::span<const uint8_t> data) {
  // Access takes one buffer for both directions; a store's bytes are only read.
  std::array<uint8_t, 8> bytes = {};
  if (data.size() > bytes.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("a %d-byte store", data.size()));
  }
  std::copy(data.begin(), data.end(), bytes.begin());
  return AsDeviceAction(Access(offset, true, std::span<uint8_t>(bytes.data(), data.size())));
}

}  // namespace sigvisor
