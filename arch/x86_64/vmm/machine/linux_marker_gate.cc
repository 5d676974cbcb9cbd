#include "arch/x86_64/vmm/machine/linux_marker_gate.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "vmm/run/linux_marker.h"

namespace sigvisor::x86 {

HypercallResult LinuxMarkerGate::Access(uint64_t offset, bool is_write,
                                        std::span<uint8_t> data) const {
  if (!is_write) {
    std::fill(data.begin(), data.end(), 0xff);
    return HypercallResult{};
  }
  if (offset != 0) {
    return HypercallResult::Fail(
        Outcome::kBadDeviceAccess,
        absl::StrFormat("Linux marker port: a write at +%d; the protocol writes 4 bytes at "
                        "its first port",
                        offset));
  }
  absl::StatusOr<kvm_regs> regs = cpu_.GetRegs();
  if (!regs.ok()) {
    return HypercallResult::Fail(
        Outcome::kHostError,
        absl::StrFormat("Linux marker: reading the vCPU's registers: %s", regs.status().message()));
  }
  const LinuxMarkerRegisters registers = {
      .rax = regs->rax, .rbx = regs->rbx, .rcx = regs->rcx, .rdx = regs->rdx,
      .rsi = regs->rsi, .rdi = regs->rdi, .r8 = regs->r8,   .r9 = regs->r9,
      .r10 = regs->r10, .r11 = regs->r11};
  return DecodeLinuxMarker(data, registers);
}

}  // namespace sigvisor::x86
