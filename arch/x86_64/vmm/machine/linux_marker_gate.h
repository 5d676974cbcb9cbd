// The Linux marker port (guest-kit/abi/sigvisor_abi.h, "The Linux marker protocol")
// on the x86 bus: a 4-byte `outl` whose arguments are the vCPU's general registers,
// read at the exit, handed to vmm/run/linux_marker.h as plain values and decoded there
// into what the phase and exit hypercalls answer. The run loop applies it as it
// applies a hypercall.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_MARKER_GATE_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_MARKER_GATE_H_

#include <linux/kvm.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "arch/x86_64/vmm/cpu/vcpu_state.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor::x86 {

// One write to the marker port: `data`, the bytes the exit carries (eax's), and
// `regs`, the writer's registers at the exit. Fails the run as a bad device access
// when the write breaks the protocol or eax is not what was written (the registers
// are then another moment's or another vCPU's).
HypercallResult DecodeLinuxMarkerWrite(std::span<const uint8_t> data, const kvm_regs& regs);

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
