// What a PC's bus answers where no device decodes an access: reads float high (all
// ones) and writes go nowhere. A Linux guest probes ports and addresses that a
// kvmtool- or Firecracker-style machine does not have (the ISA DMA controller, the
// POST port, the PIT's speaker gate on some paths...) and expects exactly that, so
// its machine installs one of these per address space (Bus::SetUnclaimed). The
// bundled kernel's machine does not: there a stray access is a bug and ends the run.
//
// The bus hands it the address itself as the offset. The exit ledger keys each
// access by its port or address already (ExitKey::value), so a report lists which
// ports the guest poked, one row each, "port 0x61 in (unclaimed)", without anything
// formatted during the exit.
#ifndef SIGVISOR_DEVICES_PC_UNCLAIMED_H_
#define SIGVISOR_DEVICES_PC_UNCLAIMED_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

class Unclaimed : public Device {
 public:
  std::string_view name() const override { return "unclaimed"; }

  // Every byte reads 0xff, at any width.
  absl::StatusOr<DeviceAction> Read(uint64_t address, std::span<uint8_t> data) override;
  // Dropped.
  absl::StatusOr<DeviceAction> Write(uint64_t address, std::span<const uint8_t> data) override;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_PC_UNCLAIMED_H_
