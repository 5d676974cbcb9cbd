// QEMU's fw_cfg over I/O ports, as much of it as Multiboot test kernels read: a 16-bit
// selector at 0x510 and a data byte at 0x511 that steps through the selected item.
// Items: 0x0000 the signature "QEMU", 0x0001 the interface ID (1: the traditional
// port interface, no DMA), 0x0003 the RAM size (64-bit little endian), 0x0005 the
// number of CPUs (16-bit little endian). An unknown item, or a read past an item's
// end, reads 0 (as QEMU). The DMA ports (0x514) are not provided.
#ifndef SIGVISOR_DEVICES_PC_FW_CFG_H_
#define SIGVISOR_DEVICES_PC_FW_CFG_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

class FwCfg : public Device {
 public:
  static constexpr uint64_t kPortBase = 0x510;
  static constexpr uint64_t kPortCount = 2;  // selector (16-bit), data (8-bit)
  static constexpr uint16_t kSignature = 0x0000;
  static constexpr uint16_t kId = 0x0001;
  static constexpr uint16_t kRamSize = 0x0003;
  static constexpr uint16_t kNbCpus = 0x0005;

  FwCfg(uint64_t ram_bytes, uint16_t cpus);

  std::string_view name() const override { return "fw_cfg"; }
  std::string AccessName(uint64_t offset) const override;

  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

  uint16_t selected() const { return selector_; }

 private:
  std::map<uint16_t, std::vector<uint8_t>> items_;
  uint16_t selector_ = 0;
  size_t position_ = 0;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_PC_FW_CFG_H_
