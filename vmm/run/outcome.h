// How a run goes on or ends: the one vocabulary of the run loop, the APs' loops, the
// handlers they consult (RunVerdict), the interceptors (RunEnd) and the reports
// (OutcomeName is the JSON's "outcome").
#ifndef SIGVISOR_VMM_RUN_OUTCOME_H_
#define SIGVISOR_VMM_RUN_OUTCOME_H_

#include <string_view>

namespace sigvisor {

enum class Outcome {
  kExited,            // the guest asked to exit (hypercall or debug-exit device)
  kPanicked,          // the guest kernel reported a panic
  kTripleFault,       // KVM_EXIT_SHUTDOWN
  kEmulationFailure,  // KVM_EXIT_INTERNAL_ERROR
  kEntryFailure,      // KVM_EXIT_FAIL_ENTRY
  kTimeout,           // the watchdog fired
  kInterrupted,       // the VMM was asked to stop (SIGINT or SIGTERM to `sigvisor run`)
  kBadDeviceAccess,   // port or MMIO access nothing answers, or a malformed hypercall
  kUnexpectedExit,    // an exit the VMM does not handle
  kHostError,         // an ioctl failed
  kKilled,            // a debugger killed the guest (gdb `kill`)
  kReboot,            // the guest reset the machine (a device's DeviceAction::kReset:
                      // the i8042's reset line); sigvisor does not restart it
  kSaved,             // the guest reached its quiescent point and the VMM saved it
                      // there (`sigvisor snapshot`, docs/snapshots.md)
};

// The stable name reports print ("exited", "triple_fault", ...).
std::string_view OutcomeName(Outcome outcome);

// What the run loop does once a handler has answered. Every handler the loops consult
// answers in these words (an interceptor, the exit classifier, a device exit, a
// hypercall or the Linux marker port), so that a reader of a loop knows what an answer
// means without knowing which handler gave it.
enum class RunVerdict {
  kContinue,    // the guest resumes
  kGuestEnded,  // the guest ended the run itself (exit, panic, isa-debug-exit, a reset)
  kRunFailed,   // the run ends without the guest's say: an Outcome says why (a fault
                // the VMM cannot carry out, a host error, a debugger's kill)
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_OUTCOME_H_
