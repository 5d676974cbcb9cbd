// The Linux marker port (guest-kit/abi/sigvisor_abi.h, "The Linux marker protocol")
// on the x86 bus: a 4-byte write whose arguments are the vCPU's general registers,
// read at the exit and decoded by vmm/run/linux_marker.h into what the phase and exit
// hypercalls answer. The run loop applies it as it applies a hypercall.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_MARKER_GATE_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_MARKER_GATE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "arch/x86_64/vmm/cpu/vcpu_state.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor::x86 {

class LinuxMarkerGate : public CallGate {
 public:
  // The ports it occupies (SIGVISOR_LINUX_MARKER_PORT on).
  static constexpr uint64_t kPortCount = 4;

  // `cpu` (vCPU 0, where the marker exits arrive) must outlive the gate.
  explicit LinuxMarkerGate(VcpuState& cpu) : cpu_(cpu) {}

  std::string_view name() const override { return "linux_marker"; }

  HypercallResult Access(uint64_t offset, bool is_write, std::span<uint8_t> data) const override;

 private:
  VcpuState& cpu_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_MARKER_GATE_H_
