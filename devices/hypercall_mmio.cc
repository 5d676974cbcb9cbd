#include "devices/hypercall_mmio.h"

#include "absl/strings/str_format.h"

namespace sigvisor {

absl::StatusOr<DeviceAction> HypercallMmioWindow::Write(uint64_t offset,
                                                        std::span<const uint8_t> data) {
  if (offset % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "hypercall window: a store at offset %#x; hypercall NR is the word at 4 * NR", offset));
  }
  return calls_.Write(offset / 4, data);
}

}  // namespace sigvisor
