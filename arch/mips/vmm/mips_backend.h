// The MIPS interpreter behind the backend seam (vmm/run/backend.h), so the run loop
// (Session) that drives KVM drives it unchanged: an access to a host device becomes
// a kMmio exit whose data buffer the bus fills for a read before the next Run, as
// with KVM; `wait` on every core with nothing to wake them becomes kHalt; the
// watchdog's Kick is an atomic flag checked between slices of a few tens of
// thousands of instructions.
//
// Bus errors are the interpreter's business, not the Session's: the machine asks the
// bus whether a device is at an address before it exits, and an access to nothing
// raises Data/Instruction Bus Error in the guest (docs/mips-platform.md) and counts
// `bus_errors`, so the guest kernel sees its own fault rather than the run ending.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_BACKEND_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_BACKEND_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "arch/mips/vmm/mips_system.h"
#include "vmm/run/backend.h"

namespace sigvisor::mips {

class MipsBackend : public Backend {
 public:
  // Instruction steps between two looks at the kick flag (~0.1-0.5 ms).
  static constexpr uint64_t kSliceSteps = 1 << 16;

  explicit MipsBackend(MipsSystem& system) : system_(system) {}

  absl::StatusOr<VmExit> Run() override;
  void Kick() override { kicked_.store(true, std::memory_order_release); }
  // The contract's counters summed over the cores, plus "coreN.<name>" for each core
  // when there is more than one, `bus_errors`, `vdso_fetches` and `vdso_writes`.
  absl::StatusOr<StatsSnapshot> ReadStats() override;
  // The core that ran last: pc, kernel (cpl 0) or user (cpl 3), its registers; the
  // ASID stands in for the page-table root.
  absl::StatusOr<CpuLocation> Locate() override;

 private:
  MipsSystem& system_;
  std::atomic<bool> kicked_{false};
  bool exit_outstanding_ = false;  // an MMIO exit's answer is due in buffer_
  int exit_core_ = 0;
  std::array<uint8_t, 8> buffer_{};
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_BACKEND_H_
