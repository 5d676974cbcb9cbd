// The Linux marker protocol's host side (guest-kit/abi/sigvisor_abi.h, "The Linux
// marker protocol"): a Linux guest's init marks phases and its exit with a 4-byte
// port write whose arguments are in the vCPU's registers. The architecture reads them
// (arch/x86_64/vmm/machine/linux_marker_gate.h); here they are plain values, decoded
// into what the hypercall table answers for the phase_begin, phase_end and exit
// hypercalls, so that the run loop applies both alike.
#ifndef SIGVISOR_VMM_RUN_LINUX_MARKER_H_
#define SIGVISOR_VMM_RUN_LINUX_MARKER_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor {

// A marker's arguments, as the registers the protocol names held them at the write.
struct LinuxMarkerArguments {
  std::array<char, SIGVISOR_PHASE_NAME_MAX> name = {};  // phase_begin: NUL-padded
  uint64_t ops = 0;               // phase_begin
  uint64_t flags = 0;             // phase_begin: SIGVISOR_PHASE_*
  uint64_t op_syscall_plus1 = 0;  // phase_begin: the op's system call + 1; 0: none
  uint64_t guest_tsc = 0;         // phase_begin, phase_end
  uint64_t exit_status = 0;       // exit
};

// The word a write to the marker port stores, or InvalidArgument with the reason
// for a write that is not 4 bytes or lacks the magic. Reads of the port are not part
// of the protocol: the caller answers them all-ones.
absl::StatusOr<uint32_t> LinuxMarkerWord(std::span<const uint8_t> data);

// How a write that breaks the protocol fails the run: kRunFailed, kBadDeviceAccess,
// one line that says why.
HypercallResult LinuxMarkerMalformed(std::string why);

// What marker `word` (LinuxMarkerWord's) asks for with `arguments`: a phase marker
// (kContinue with `marker` and `guest_tsc`), the end of the run (kGuestEnded,
// kExited, status & 0xff), or LinuxMarkerMalformed for an unknown command or flags.
HypercallResult DecodeLinuxMarker(uint32_t word, const LinuxMarkerArguments& arguments);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_LINUX_MARKER_H_
