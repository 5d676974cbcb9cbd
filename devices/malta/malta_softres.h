// The Malta board's SOFTRES register (physical 0x1f000500): writing 0x42 resets the
// board, which QEMU with -no-reboot turns into exiting. sigvisor treats it as the
// guest powering off with status 0, so one MIPS image stops the same way under both.
#ifndef SIGVISOR_DEVICES_MALTA_MALTA_SOFTRES_H_
#define SIGVISOR_DEVICES_MALTA_MALTA_SOFTRES_H_

#include <cstdint>
#include <span>

#include "vmm/machine/device.h"

namespace sigvisor {

class MaltaSoftReset : public Device {
 public:
  static constexpr uint64_t kAddress = 0x1f000500;
  static constexpr uint64_t kBytes = 4;
  static constexpr uint8_t kResetValue = 0x42;

  std::string_view name() const override { return "malta_softres"; }
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  // The low byte of a write at offset 0 decides; other values are ignored, as QEMU does.
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

  bool powered_off() const { return powered_off_; }

 private:
  bool powered_off_ = false;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_MALTA_MALTA_SOFTRES_H_
