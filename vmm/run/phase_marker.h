// A BEGIN or END marker the guest set (the phase hypercalls): what a guest protocol
// hands the run loop, and what the loop shows its interceptors once the marker's exit
// is handled.
#ifndef SIGVISOR_VMM_RUN_PHASE_MARKER_H_
#define SIGVISOR_VMM_RUN_PHASE_MARKER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "vmm/ledger/guest_ipis.h"

namespace sigvisor {

struct PhaseMarker {
  bool begin = true;
  std::string name;   // BEGIN: the phase's name
  uint64_t ops = 0;   // BEGIN: its operations
  bool calibration = false;  // BEGIN: an empty calibration phase (not reported)
  std::optional<uint64_t> op_syscall;  // BEGIN: the per-op system call, if the guest named one
  // An SMP kernel's IPI counts so far, every CPU's (both markers); empty otherwise.
  GuestIpiCounts guest_ipis;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_PHASE_MARKER_H_
