// A port I/O or MMIO exit carried out over the bus: the one place that knows how a
// VmExit becomes device accesses (string I/O is one access per element). Used by the
// session's run loop and by the APs' loops (arch/x86_64/vmm/ap_runner).
#ifndef SIGVISOR_VMM_RUN_DEVICE_EXIT_H_
#define SIGVISOR_VMM_RUN_DEVICE_EXIT_H_

#include <string>

#include "vmm/machine/bus.h"
#include "vmm/run/outcome.h"
#include "vmm/run/vm_exit.h"

namespace sigvisor {

struct DeviceExitResult {
  enum class Kind {
    kContinue,  // the guest resumes
    kStop,      // a device ended the run (isa-debug-exit, the exit hypercall)
    kEnd,       // the run fails with `outcome`: the exit itself makes no sense (a
                // backend bug: unexpected exit), or no device is there, or the device
                // refused the access (bad device access)
  };
  Kind kind = Kind::kContinue;
  std::string detail;  // for the exit ledger, e.g. "port 0x3f8 out (serial THR)"
  Outcome outcome = Outcome::kUnexpectedExit;  // kEnd
  std::string error;                           // kEnd: one line
};

// `exit` must be kIo or kMmio. A read's result is written into exit.data.
DeviceExitResult DispatchDeviceExit(Bus& bus, const VmExit& exit);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_DEVICE_EXIT_H_
