// QEMU's isa-debug-exit (`-device isa-debug-exit,iobase=0xf4,iosize=4`): test kernels
// end a run by writing a value v to it, and QEMU exits with status (v << 1) | 1. The
// odd status keeps a deliberate exit apart from QEMU's own exit 0. The machine
// registers it at port 0xf4.
#ifndef SIGVISOR_DEVICES_PC_DEBUG_EXIT_H_
#define SIGVISOR_DEVICES_PC_DEBUG_EXIT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

class DebugExit : public Device {
 public:
  // Ports the device occupies (QEMU's iosize=4).
  static constexpr uint64_t kPortCount = 4;

  std::string_view name() const override { return "debug-exit"; }

  // Reads return 0.
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  // A 1-, 2- or 4-byte write at any offset records the exit status and returns kStop.
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

  // (v << 1) | 1 for the last value v written, as QEMU passes it to exit(); the
  // process status a shell sees is its low 8 bits. Empty until the guest writes.
  std::optional<int> exit_status() const { return exit_status_; }

 private:
  std::optional<int> exit_status_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_PC_DEBUG_EXIT_H_
