// The hypercall device as an MMIO window (the MIPS platform, docs/mips-platform.md):
// a 32-bit store of an argument block's physical address to base + 4 * NR makes
// hypercall NR, exactly as the x86-64 `outl` to port 0x500 + NR. One dispatcher
// (HypercallDevice) serves both; this only turns the word offset into NR.
#ifndef SIGVISOR_DEVICES_HYPERCALL_MMIO_H_
#define SIGVISOR_DEVICES_HYPERCALL_MMIO_H_

#include <cstdint>
#include <span>
#include <string>

#include "devices/hypercall.h"

namespace sigvisor {

class HypercallMmioWindow : public Device {
 public:
  // Bytes the window occupies (0x1f100000 - 0x1f1000ff).
  static constexpr uint64_t kWindowBytes = 0x100;

  explicit HypercallMmioWindow(HypercallDevice& calls) : calls_(calls) {}

  std::string_view name() const override { return "hypercall"; }
  std::string AccessName(uint64_t offset) const override { return calls_.AccessName(offset / 4); }
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override {
    return calls_.Read(offset / 4, data);
  }
  // A write that is not a whole aligned word names no hypercall: an error, as a
  // malformed port hypercall is.
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

 private:
  HypercallDevice& calls_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_HYPERCALL_MMIO_H_
