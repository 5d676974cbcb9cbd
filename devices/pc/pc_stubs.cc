#include "devices/pc/pc_stubs.h"

#include <algorithm>

namespace sigvisor {

absl::StatusOr<DeviceAction> PicMasks::Read(uint64_t offset, std::span<uint8_t> data) {
  std::fill(data.begin(), data.end(), 0);
  if (offset == 1 && !data.empty()) data[0] = mask_;
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> PicMasks::Write(uint64_t offset, std::span<const uint8_t> data) {
  // ICW2-4 also arrive at the data port; a later OCW1 (the mask) overwrites them.
  if (offset == 1 && !data.empty()) mask_ = data[0];
  return DeviceAction::kContinue;
}

std::string PciAbsent::AccessName(uint64_t offset) const {
  return offset < 4 ? "pci-config address" : "pci-config data";
}

absl::StatusOr<DeviceAction> PciAbsent::Read(uint64_t offset, std::span<uint8_t> data) {
  for (size_t i = 0; i < data.size(); ++i) {
    const uint64_t reg = offset + i;
    data[i] = reg < 4 ? static_cast<uint8_t>(address_ >> (8 * reg)) : 0xff;
  }
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> PciAbsent::Write(uint64_t offset, std::span<const uint8_t> data) {
  if (offset == 0 && data.size() == 4) {
    address_ = uint32_t{data[0]} | uint32_t{data[1]} << 8 | uint32_t{data[2]} << 16 |
               uint32_t{data[3]} << 24;
  }
  return DeviceAction::kContinue;
}

}  // namespace sigvisor
