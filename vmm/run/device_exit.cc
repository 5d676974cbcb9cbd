#include "vmm/run/device_exit.h"

#include <cstdint>
#include <span>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

// One element's outcome: the device's (or the gate's) answer, or why the run fails.
struct Step {
  DeviceAction action = DeviceAction::kContinue;
  Outcome outcome = Outcome::kBadDeviceAccess;
  bool failed = false;  // the run fails with `outcome`
  std::string error;
};

}  // namespace

std::string AccessNameOf(const Bus& bus, const ExitKey& key) {
  return bus.AccessName(key.kind == ExitKind::kIo ? AddressSpace::kPort : AddressSpace::kMmio,
                        key.value);
}

DeviceExitResult DispatchDeviceExit(Bus& bus, const VmExit& exit) {
  return DispatchDeviceExit(bus, exit, nullptr, [](HypercallResult&) {
    return DeviceAction::kContinue;
  });
}

DeviceExitResult DispatchDeviceExit(Bus& bus, const VmExit& exit, const CallGate* gate,
                                    absl::FunctionRef<DeviceAction(HypercallResult&)> take) {
  DeviceExitResult result;
  const bool port = exit.kind == ExitKind::kIo;
  const AddressSpace space = port ? AddressSpace::kPort : AddressSpace::kMmio;
  // String I/O (rep outsb) arrives as one exit with count > 1: one access each.
  const uint32_t count = port ? exit.count : 1;
  if (exit.size == 0 || exit.data.size() != uint64_t{exit.size} * count) {
    result.kind = DeviceExitResult::Kind::kEnd;
    result.outcome = Outcome::kUnexpectedExit;
    result.error = port ? "malformed port I/O exit" : "malformed MMIO exit";
    return result;
  }
  auto access_error = [&](const auto& why) {
    return absl::StrFormat("%d-byte %s %s at %#x: %s", exit.size, port ? "port" : "MMIO",
                           exit.is_write ? "write" : "read", exit.address, why);
  };
  for (uint32_t i = 0; i < count; ++i) {
    std::span<uint8_t> one = exit.data.subspan(size_t{i} * exit.size, exit.size);
    absl::StatusOr<Step> step = bus.WithDevice(
        space, exit.address, one.size(), [&](Device& device, uint64_t offset) {
          Step done;
          if (&device == gate) {
            HypercallResult call = gate->Access(offset, exit.is_write, one);
            if (call.kind == HypercallResult::Kind::kFail) {
              done.failed = true;
              done.outcome = call.outcome;
              done.error = std::move(call.diagnosis);
              return done;
            }
            done.action = take(call);
            return done;
          }
          absl::StatusOr<DeviceAction> action =
              exit.is_write ? device.Write(offset, one) : device.Read(offset, one);
          if (!action.ok()) {
            done.failed = true;
            done.error = std::string(action.status().message());
            return done;
          }
          done.action = *action;
          return done;
        });
    if (!step.ok()) {
      result.kind = DeviceExitResult::Kind::kEnd;
      result.outcome = Outcome::kBadDeviceAccess;
      result.error = access_error(step.status().message());
      return result;
    }
    if (step->failed) {
      result.kind = DeviceExitResult::Kind::kEnd;
      result.outcome = step->outcome;
      // A refused access names itself; a call an owner could not serve (the
      // injector's) says why in its own words.
      result.error = step->outcome == Outcome::kBadDeviceAccess ? access_error(step->error)
                                                                : std::move(step->error);
      return result;
    }
    if (step->action == DeviceAction::kStop || step->action == DeviceAction::kReset) {
      result.kind = DeviceExitResult::Kind::kStop;
      result.reset = step->action == DeviceAction::kReset;
      return result;
    }
  }
  return result;
}

}  // namespace sigvisor
