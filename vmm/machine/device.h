// A device on the machine's bus. Port I/O and MMIO share one interface (kvmtool's
// single bus): a device sees an offset into the range it was registered for.
#ifndef SIGVISOR_VMM_MACHINE_DEVICE_H_
#define SIGVISOR_VMM_MACHINE_DEVICE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sigvisor {

// What an access asks the run loop to do after the device has handled it.
enum class DeviceAction {
  kContinue,  // resume the vCPU
  kStop,      // the guest asked to stop (exit device, fatal hypercall)
  kReset,     // the guest pulsed the machine's reset line (the i8042's 0xfe): the run
              // ends as a reboot; sigvisor does not restart the guest
};

class Device {
 public:
  virtual ~Device() = default;

  // Short stable name for reports and the ledger ("serial", "hypercall").
  virtual std::string_view name() const = 0;

  // What an access at `offset` is, for the exit ledger's detail column. Devices
  // whose registers mean different things override it ("hypercall console_write").
  virtual std::string AccessName(uint64_t offset) const { return std::string(name()); }

  // `offset` is relative to the start of the registered range; `data` is 1, 2, 4 or
  // 8 bytes. A read fills `data`. Errors are reported, never fatal to the host: the
  // run loop turns a failed access into a clear diagnosis.
  virtual absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) = 0;
  virtual absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) = 0;
};

// A device that occupies several separate ranges (the i8042's 0x60 and 0x64,
// pc-testdev's ports, IRQ ports and memory): each range is a DeviceRange on the bus,
// and the owner sees which one an access came through.
class MultiRangeDevice {
 public:
  virtual ~MultiRangeDevice() = default;
  virtual std::string_view name() const = 0;
  virtual std::string AccessName(int range, uint64_t offset) const = 0;
  virtual absl::StatusOr<DeviceAction> Read(int range, uint64_t offset,
                                            std::span<uint8_t> data) = 0;
  virtual absl::StatusOr<DeviceAction> Write(int range, uint64_t offset,
                                             std::span<const uint8_t> data) = 0;
};

// Range `range` of `owner` (which must outlive it), as the bus sees it.
class DeviceRange final : public Device {
 public:
  DeviceRange(MultiRangeDevice& owner, int range) : owner_(owner), range_(range) {}
  std::string_view name() const override { return owner_.name(); }
  std::string AccessName(uint64_t offset) const override {
    return owner_.AccessName(range_, offset);
  }
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override {
    return owner_.Read(range_, offset, data);
  }
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override {
    return owner_.Write(range_, offset, data);
  }

 private:
  MultiRangeDevice& owner_;
  int range_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_MACHINE_DEVICE_H_
