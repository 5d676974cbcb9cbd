// One bus for port I/O and MMIO (kvmtool's single interval map): devices register
// [base, base + length) in an address space; an access is routed to the one device
// whose range contains it, with the offset into that range. Read and Write hold one
// mutex around the device's handler, so vCPU threads of one machine may share a bus
// (and its devices); registration happens before any vCPU runs.
#ifndef SIGVISOR_VMM_MACHINE_BUS_H_
#define SIGVISOR_VMM_MACHINE_BUS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

enum class AddressSpace { kPort, kMmio };

class Bus {
 public:
  // Registers `device` (not owned; it must outlive the bus) for [base, base+length).
  // Fails on an empty range, an overflowing one, or one that overlaps a registered
  // range, naming both devices.
  absl::Status Register(AddressSpace space, uint64_t base, uint64_t length, Device* device);

  // Routes an access. NotFound (naming the space and address) when no device covers
  // [addr, addr + data.size()); the run loop reports that as the guest touching
  // something the machine does not have.
  absl::StatusOr<DeviceAction> Read(AddressSpace space, uint64_t addr, std::span<uint8_t> data);
  absl::StatusOr<DeviceAction> Write(AddressSpace space, uint64_t addr,
                                     std::span<const uint8_t> data);

  // The device covering `addr`, or nullptr.
  Device* Find(AddressSpace space, uint64_t addr) const;

  // How the ledger names an access at `addr`: the device's AccessName for its
  // offset, or "nothing" where no device is.
  std::string AccessName(AddressSpace space, uint64_t addr) const;

 private:
  struct Range {
    uint64_t length;
    Device* device;
  };
  std::map<uint64_t, Range>& RangesOf(AddressSpace space) {
    return space == AddressSpace::kPort ? ports_ : mmio_;
  }
  const std::map<uint64_t, Range>& RangesOf(AddressSpace space) const {
    return space == AddressSpace::kPort ? ports_ : mmio_;
  }

  std::map<uint64_t, Range> ports_;  // keyed by base
  std::map<uint64_t, Range> mmio_;
  std::mutex dispatch_;  // held around each device Read/Write (multi-vCPU machines)
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_MACHINE_BUS_H_
