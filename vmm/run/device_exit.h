// A port I/O or MMIO exit carried out over the bus: the one place that knows how a
// VmExit becomes device accesses (string I/O is one access per element). Used by the
// session's run loop and by the APs' loops (arch/x86_64/vmm/ap_runner). Nothing is
// formatted unless the access fails: the ledger keys the exit (ExitKeyOf) and names
// it after the run.
#ifndef SIGVISOR_VMM_RUN_DEVICE_EXIT_H_
#define SIGVISOR_VMM_RUN_DEVICE_EXIT_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "vmm/ledger/exit_ledger.h"
#include "vmm/machine/bus.h"
#include "vmm/run/hypercall_table.h"
#include "vmm/run/outcome.h"
#include "vmm/run/vm_exit.h"

namespace sigvisor {

// kGuestEnded: a device or a hypercall ended the run (isa-debug-exit, exit, panic,
// the reset line). kRunFailed with `outcome`: the exit itself makes no sense (a
// backend bug: unexpected exit), or no device is there, or the device refused the
// access (bad device access), or a hypercall could not be served.
struct DeviceExitResult {
  RunVerdict verdict = RunVerdict::kContinue;
  // kGuestEnded: the device pulsed the machine's reset line (DeviceAction::kReset)
  // rather than asking to exit; the loop ends the run as a reboot.
  bool reset = false;
  Outcome outcome = Outcome::kUnexpectedExit;  // kRunFailed
  std::string diagnosis;                       // kRunFailed: one line
};

// The name of the device register an exit ledger's access key touched
// (Bus::AccessName): "serial", "hypercall console_write", "nothing".
std::string AccessNameOf(const Bus& bus, const ExitKey& key);

// `exit` must be kIo or kMmio. A read's result is written into exit.data.
DeviceExitResult DispatchDeviceExit(Bus& bus, const VmExit& exit);

// As above, on a machine with hypercalls: an access that routes to `gate` goes to the
// gate, and `take` gets each call's result that did not fail the run (one per element
// of string I/O) before the next; it answers kGuestEnded when the result ended the run.
DeviceExitResult DispatchDeviceExit(Bus& bus, const VmExit& exit, const CallGate* gate,
                                    absl::FunctionRef<RunVerdict(HypercallResult&)> take);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_DEVICE_EXIT_H_
