#include "devices/pc/debug_exit.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sigvisor {

absl::StatusOr<DeviceAction> DebugExit::Read(uint64_t offset, std::span<uint8_t> data) {
  std::fill(data.begin(), data.end(), 0);
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> DebugExit::Write(uint64_t offset, std::span<const uint8_t> data) {
  // Port I/O is 1, 2 or 4 bytes wide; anything else is a bug on the host side.
  if (data.size() != 1 && data.size() != 2 && data.size() != 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "debug-exit: a %d-byte write is not a port access (1, 2 or 4 bytes)", data.size()));
  }
  uint64_t value = 0;  // little endian, like the guest's `out`
  for (size_t i = 0; i < data.size(); ++i) value |= uint64_t{data[i]} << (8 * i);
  // QEMU computes this in 64 bits and hands it to exit(int); converting the same way
  // (modulo 2^32, well defined since C++20) keeps the low 8 bits identical.
  exit_status_ = static_cast<int>(static_cast<uint32_t>((value << 1) | 1));
  return DeviceAction::kStop;
}

}  // namespace sigvisor
