#include "devices/pc/unclaimed.h"

#include <algorithm>

namespace sigvisor {

absl::StatusOr<DeviceAction> Unclaimed::Read(uint64_t, std::span<uint8_t> data) {
  std::fill(data.begin(), data.end(), 0xff);
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> Unclaimed::Write(uint64_t, std::span<const uint8_t>) {
  return DeviceAction::kContinue;
}

}  // namespace sigvisor
