// The Linux marker protocol's host side (guest-kit/abi/sigvisor_abi.h, "The Linux
// marker protocol"): a Linux guest's init marks phases and its exit with a 4-byte
// port write whose arguments are in the vCPU's general registers. The decoder takes
// the write and the registers at the exit (a plain struct, so that it is tested
// without KVM) and answers what the hypercall table answers for the phase_begin,
// phase_end and exit hypercalls: the run loop applies both alike.
#ifndef SIGVISOR_VMM_RUN_LINUX_MARKER_H_
#define SIGVISOR_VMM_RUN_LINUX_MARKER_H_

#include <cstdint>
#include <span>

#include "vmm/run/hypercall_table.h"

namespace sigvisor {

// The general registers the protocol reads, as the vCPU held them at the write
// (x86: kvm_regs, from KVM_GET_REGS or the kvm_run page's synchronized registers).
struct LinuxMarkerRegisters {
  uint64_t rax = 0, rbx = 0, rcx = 0, rdx = 0, rsi = 0, rdi = 0;
  uint64_t r8 = 0, r9 = 0, r10 = 0, r11 = 0;
};

// One write to the marker port: `data`, the bytes the exit carries (the guest's
// eax); `registers`, the vCPU's at the exit. A phase marker (kContinue with `marker`
// and `guest_tsc`), the end of the run (kEnd, kExited, status & 0xff), or kFail with
// kBadDeviceAccess and one line for a write that is not 4 bytes, lacks the magic,
// disagrees with the registers' eax, names an unknown command or unknown flags.
// Reads of the port are not part of the protocol: the caller answers them all-ones.
HypercallResult DecodeLinuxMarker(std::span<const uint8_t> data,
                                  const LinuxMarkerRegisters& registers);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_LINUX_MARKER_H_
