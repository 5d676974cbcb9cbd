#include "vmm/run/outcome.h"

namespace sigvisor {

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kExited: return "exited";
    case Outcome::kPanicked: return "guest_panic";
    case Outcome::kTripleFault: return "triple_fault";
    case Outcome::kEmulationFailure: return "emulation_failure";
    case Outcome::kEntryFailure: return "entry_failure";
    case Outcome::kTimeout: return "timeout";
    case Outcome::kInterrupted: return "interrupted";
    case Outcome::kBadDeviceAccess: return "bad_device_access";
    case Outcome::kUnexpectedExit: return "unexpected_exit";
    case Outcome::kHostError: return "host_error";
    case Outcome::kKilled: return "killed";
    case Outcome::kReboot: return "reboot";
    case Outcome::kSaved: return "saved";
  }
  return "unknown";
}

}  // namespace sigvisor
