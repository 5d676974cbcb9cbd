#include "vmm/run/device_exit.h"

#include <cstdint>
#include <span>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

AddressSpace SpaceOf(ExitKind kind) {
  switch (kind) {
    case ExitKind::kIo: return AddressSpace::kPort;
    case ExitKind::kMsr: return AddressSpace::kMsr;
    default: return AddressSpace::kMmio;
  }
}

// One element's answer, the device's or the gate's.
struct Step {
  RunVerdict verdict = RunVerdict::kContinue;
  bool reset = false;                           // kGuestEnded
  Outcome outcome = Outcome::kBadDeviceAccess;  // kRunFailed
  std::string diagnosis;                        // kRunFailed
};

}  // namespace

std::string AccessNameOf(const Bus& bus, const ExitKey& key) {
  return bus.AccessName(SpaceOf(key.kind), key.value);
}

DeviceExitResult DispatchDeviceExit(Bus& bus, const VmExit& exit) {
  return DispatchDeviceExit(bus, exit, nullptr, [](HypercallResult&) {
    return RunVerdict::kContinue;
  });
}

DeviceExitResult DispatchDeviceExit(Bus& bus, const VmExit& exit, const CallGate* gate,
                                    absl::FunctionRef<RunVerdict(HypercallResult&)> take) {
  DeviceExitResult result;
  const bool port = exit.kind == ExitKind::kIo;
  const AddressSpace space = SpaceOf(exit.kind);
  // String I/O (rep outsb) arrives as one exit with count > 1: one access each.
  const uint32_t count = port ? exit.count : 1;
  if (exit.size == 0 || exit.data.size() != uint64_t{exit.size} * count) {
    result.verdict = RunVerdict::kRunFailed;
    result.outcome = Outcome::kUnexpectedExit;
    result.diagnosis = absl::StrFormat("malformed %s exit", AddressSpaceName(space));
    return result;
  }
  auto access_error = [&](const auto& why) {
    return absl::StrFormat("%d-byte %s %s at %#x: %s", exit.size, AddressSpaceName(space),
                           exit.is_write ? "write" : "read", exit.address, why);
  };
  for (uint32_t i = 0; i < count; ++i) {
    std::span<uint8_t> one = exit.data.subspan(size_t{i} * exit.size, exit.size);
    absl::StatusOr<Step> step = bus.WithDevice(
        space, exit.address, one.size(), [&](Device& device, uint64_t offset) {
          Step done;
          if (&device == gate) {
            HypercallResult call = gate->Access(offset, exit.is_write, one);
            if (call.verdict == RunVerdict::kRunFailed) {
              done.verdict = RunVerdict::kRunFailed;
              done.outcome = call.outcome;
              done.diagnosis = std::move(call.diagnosis);
              return done;
            }
            done.verdict = take(call);
            return done;
          }
          absl::StatusOr<DeviceAction> action =
              exit.is_write ? device.Write(offset, one) : device.Read(offset, one);
          if (!action.ok()) {
            done.verdict = RunVerdict::kRunFailed;
            done.diagnosis = std::string(action.status().message());
            return done;
          }
          // A device stops the run only as the guest asks it to (an exit device, the
          // reset line).
          done.verdict =
              *action == DeviceAction::kContinue ? RunVerdict::kContinue : RunVerdict::kGuestEnded;
          done.reset = *action == DeviceAction::kReset;
          return done;
        });
    if (!step.ok()) {
      result.verdict = RunVerdict::kRunFailed;
      result.outcome = Outcome::kBadDeviceAccess;
      result.diagnosis = access_error(step.status().message());
      return result;
    }
    switch (step->verdict) {
      case RunVerdict::kContinue: break;
      case RunVerdict::kGuestEnded:
        result.verdict = RunVerdict::kGuestEnded;
        result.reset = step->reset;
        return result;
      case RunVerdict::kRunFailed:
        result.verdict = RunVerdict::kRunFailed;
        result.outcome = step->outcome;
        // A refused access names itself; a call an owner could not serve (the
        // injector's) says why in its own words.
        result.diagnosis = step->outcome == Outcome::kBadDeviceAccess
                               ? access_error(step->diagnosis)
                               : std::move(step->diagnosis);
        return result;
    }
  }
  return result;
}

}  // namespace sigvisor
