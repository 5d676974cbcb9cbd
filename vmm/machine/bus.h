// One bus for port I/O, MMIO and the MSRs the VMM emulates (kvmtool's single interval
// map): devices register [base, base + length) in an address space; an access is
// routed to the one device whose range contains it, with the offset into that range.
// Registration happens before any vCPU runs; after it the ranges are only read.
//
// What nothing claims is an error by default: the bundled kernel touches only what
// its machine has, so a stray access is a bug worth stopping for. A machine for a
// guest written for a PC (Linux) gives each space an "unclaimed" device instead
// (SetUnclaimed), which answers every access no range covers, as a PC's bus does.
//
// Devices are not thread-safe. A machine whose vCPUs run on several threads over one
// bus (x86 APs, ap_runner.h) calls Share() before they start: every device access
// then holds one mutex. A one-vCPU machine's run loop takes no lock (an uncontended
// lock is still two atomic operations on every exit).
#ifndef SIGVISOR_VMM_MACHINE_BUS_H_
#define SIGVISOR_VMM_MACHINE_BUS_H_

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

// kMsr: model-specific registers, by index, that KVM hands to the VMM (a local APIC
// in the VMM takes the x2APIC's, 0x800-0x8ff); an access is 8 bytes, EDX:EAX.
enum class AddressSpace { kPort, kMmio, kMsr };
const char* AddressSpaceName(AddressSpace space);  // "port", "MMIO", "MSR"

class Bus {
 public:
  // Registers `device` (not owned; it must outlive the bus) for [base, base+length).
  // Fails on an empty range, an overflowing one, or one that overlaps a registered
  // range, naming both devices.
  absl::Status Register(AddressSpace space, uint64_t base, uint64_t length, Device* device);

  // From now on every device access holds the bus's mutex (vCPUs on several threads).
  void Share() { shared_ = true; }

  // `fallback` (not owned; it must outlive the bus; null: none, the default) answers
  // every access in `space` that no registered range covers, at offset = the address
  // itself, so one device sees which port or address was touched. An access that
  // starts outside every range but runs into one is still refused. Before any vCPU
  // runs, like Register.
  void SetUnclaimed(AddressSpace space, Device* fallback) { SpaceOf(space).unclaimed = fallback; }

  // Routes an access. NotFound (naming the space and address) when no device covers
  // [addr, addr + data.size()) and the space has no unclaimed device; the run loop
  // reports that as the guest touching something the machine does not have.
  absl::StatusOr<DeviceAction> Read(AddressSpace space, uint64_t addr, std::span<uint8_t> data);
  absl::StatusOr<DeviceAction> Write(AddressSpace space, uint64_t addr,
                                     std::span<const uint8_t> data);

  // Routes an access of `size` bytes as Read and Write do, and calls `f(device,
  // offset)` on the device found (under the mutex once Share()d); its result, or the
  // routing error. For callers that do more with the device than Read or Write.
  template <typename F>
  auto WithDevice(AddressSpace space, uint64_t addr, size_t size, F&& f)
      -> absl::StatusOr<std::invoke_result_t<F, Device&, uint64_t>> {
    absl::StatusOr<Route> route = RouteAccess(space, addr, size);
    if (!route.ok()) return route.status();
    std::unique_lock<std::mutex> lock(dispatch_, std::defer_lock);
    if (shared_) lock.lock();
    return f(*route->device, route->offset);
  }

  // The registered device covering `addr`, or nullptr (never the unclaimed device).
  Device* Find(AddressSpace space, uint64_t addr) const;

  // How the ledger names an access at `addr`: the device's AccessName for its
  // offset, the unclaimed device's for `addr` where no range is, or "nothing".
  std::string AccessName(AddressSpace space, uint64_t addr) const;

 private:
  struct Range {
    uint64_t base;
    uint64_t length;
    Device* device;
  };
  struct Route {
    Device* device;
    uint64_t offset;
  };
  struct Space {
    // Sorted by base: a device exit is a binary search over a few contiguous entries.
    std::vector<Range> ranges;
    Device* unclaimed = nullptr;
  };
  Space& SpaceOf(AddressSpace space) { return spaces_[static_cast<size_t>(space)]; }
  const Space& SpaceOf(AddressSpace space) const { return spaces_[static_cast<size_t>(space)]; }
  std::vector<Range>& RangesOf(AddressSpace space) { return SpaceOf(space).ranges; }
  const std::vector<Range>& RangesOf(AddressSpace space) const { return SpaceOf(space).ranges; }
  const Range* FindContaining(AddressSpace space, uint64_t addr) const;
  Device* UnclaimedOf(AddressSpace space) const { return SpaceOf(space).unclaimed; }
  absl::StatusOr<Route> RouteAccess(AddressSpace space, uint64_t addr, size_t size) const;

  std::array<Space, 3> spaces_;  // by AddressSpace
  bool shared_ = false;
  std::mutex dispatch_;  // held around each device access once shared_
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_MACHINE_BUS_H_
