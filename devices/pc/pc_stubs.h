// The parts of a PC that Multiboot kernels poke at and may safely find inert.
//
// PicMasks: the two 8259 PICs (0x20/0x21 and 0xa0/0xa1). Writes are accepted and
// ignored (initialisation words, masks); a read of the data port returns the last
// mask written there, a read of the command port returns 0 (nothing pending).
// Nothing is ever delivered through them: without --irqchip there are no interrupts.
//
// PciAbsent: a PCI host bridge's configuration mechanism #1 (address 0xcf8, data
// 0xcfc-0xcff) with no device on its bus, as QEMU's host bridge decodes it: the
// address register is written only by a 32-bit write at 0xcf8 (narrower writes to
// 0xcf8-0xcfb are not it and are dropped) and reads back at any width; data reads
// return all-ones (no device answers: a vendor ID of 0xffff), data writes are dropped.
// Linux's type-1 probe reads its 0x80000000 back and finds no device on bus 0; so do
// its type-2 probe (0xcf8/0xcfa bytes read 0, the config ports 0xc000-0xcfff read
// all-ones where nothing claims them) and every scan.
#ifndef SIGVISOR_DEVICES_PC_PC_STUBS_H_
#define SIGVISOR_DEVICES_PC_PC_STUBS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

class PicMasks : public Device {
 public:
  static constexpr uint64_t kPortCount = 2;  // register once at 0x20 and once at 0xa0

  std::string_view name() const override { return "pic"; }
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

  uint8_t mask() const { return mask_; }

 private:
  uint8_t mask_ = 0;
};

class PciAbsent : public Device {
 public:
  static constexpr uint64_t kPortBase = 0xcf8;
  static constexpr uint64_t kPortCount = 8;  // 0xcf8-0xcff

  std::string_view name() const override { return "pci-config"; }
  std::string AccessName(uint64_t offset) const override;
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

 private:
  uint32_t address_ = 0;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_PC_PC_STUBS_H_
