#include "devices/pc/fw_cfg.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

std::vector<uint8_t> LittleEndian(uint64_t value, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
  return out;
}

}  // namespace

FwCfg::FwCfg(uint64_t ram_bytes, uint16_t cpus) {
  items_[kSignature] = {'Q', 'E', 'M', 'U'};
  items_[kId] = LittleEndian(1, 4);
  items_[kRamSize] = LittleEndian(ram_bytes, 8);
  items_[kNbCpus] = LittleEndian(cpus, 2);
}

std::string FwCfg::AccessName(uint64_t offset) const {
  return offset == 0 ? "fw_cfg selector" : "fw_cfg data";
}

absl::StatusOr<DeviceAction> FwCfg::Read(uint64_t offset, std::span<uint8_t> data) {
  if (offset == 0) {  // the selector reads back (QEMU returns 0; nothing relies on it)
    for (size_t i = 0; i < data.size(); ++i) data[i] = i < 2 ? selector_ >> (8 * i) : 0;
    return DeviceAction::kContinue;
  }
  // A wider read at the data port takes consecutive bytes, as QEMU's does.
  auto item = items_.find(selector_);
  for (uint8_t& byte : data) {
    byte = item != items_.end() && position_ < item->second.size() ? item->second[position_] : 0;
    ++position_;
  }
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> FwCfg::Write(uint64_t offset, std::span<const uint8_t> data) {
  if (offset != 0) {
    return absl::FailedPreconditionError(
        "fw_cfg: writes to the data port are not supported (items are read-only here)");
  }
  if (data.size() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "fw_cfg: a %d-byte write to the selector; it is a 16-bit register (outw)", data.size()));
  }
  selector_ = static_cast<uint16_t>(data[0] | (data[1] << 8));
  position_ = 0;
  return DeviceAction::kContinue;
}

}  // namespace sigvisor
