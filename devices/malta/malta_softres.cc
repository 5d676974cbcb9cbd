#include "devices/malta/malta_softres.h"

#include <algorithm>

namespace sigvisor {

absl::StatusOr<DeviceAction> MaltaSoftReset::Read(uint64_t, std::span<uint8_t> data) {
  std::fill(data.begin(), data.end(), 0);
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> MaltaSoftReset::Write(uint64_t offset, std::span<const uint8_t> data) {
  if (offset == 0 && !data.empty() && data[0] == kResetValue) {
    powered_off_ = true;
    return DeviceAction::kStop;
  }
  return DeviceAction::kContinue;
}

}  // namespace sigvisor
