#include "vmm/run/device_exit.h"

#include <cstdint>
#include <span>

#include "absl/strings/str_format.h"

namespace sigvisor {

DeviceExitResult DispatchDeviceExit(Bus& bus, const VmExit& exit) {
  DeviceExitResult result;
  const bool port = exit.kind == ExitKind::kIo;
  const AddressSpace space = port ? AddressSpace::kPort : AddressSpace::kMmio;
  result.detail = port ? absl::StrFormat("port %#x %s (%s)", exit.address,
                                         exit.is_write ? "out" : "in",
                                         bus.AccessName(space, exit.address))
                       : absl::StrFormat("mmio %#x %s (%s)", exit.address,
                                         exit.is_write ? "write" : "read",
                                         bus.AccessName(space, exit.address));
  // String I/O (rep outsb) arrives as one exit with count > 1: one access each.
  const uint32_t count = port ? exit.count : 1;
  if (exit.size == 0 || exit.data.size() != uint64_t{exit.size} * count) {
    result.kind = DeviceExitResult::Kind::kEnd;
    result.outcome = Outcome::kUnexpectedExit;
    result.error = port ? "malformed port I/O exit" : "malformed MMIO exit";
    return result;
  }
  for (uint32_t i = 0; i < count; ++i) {
    std::span<uint8_t> one = exit.data.subspan(size_t{i} * exit.size, exit.size);
    absl::StatusOr<DeviceAction> action =
        exit.is_write ? bus.Write(space, exit.address, one) : bus.Read(space, exit.address, one);
    if (!action.ok()) {
      result.kind = DeviceExitResult::Kind::kEnd;
      result.outcome = Outcome::kBadDeviceAccess;
      result.error = absl::StrFormat("%d-byte %s %s at %#x: %s", exit.size,
                                     port ? "port" : "MMIO", exit.is_write ? "write" : "read",
                                     exit.address, action.status().message());
      return result;
    }
    if (*action == DeviceAction::kStop) {
      result.kind = DeviceExitResult::Kind::kStop;
      return result;
    }
  }
  return result;
}

}  // namespace sigvisor
