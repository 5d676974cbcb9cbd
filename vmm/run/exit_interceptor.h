// The session's hook for exits that a trap mechanism consumes: the session offers
// every exit to its interceptor (if it has one) before its own dispatch. An exit the
// interceptor handles is counted in the exit ledger like any other (with the
// interceptor's detail) and, when it was a trap, in the trap ledger.
#ifndef SIGVISOR_VMM_RUN_EXIT_INTERCEPTOR_H_
#define SIGVISOR_VMM_RUN_EXIT_INTERCEPTOR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "vmm/run/vm_exit.h"

namespace sigvisor {

// One trapped guest instruction, for the trap ledger.
struct TrapRecord {
  std::string kind;      // "dr_write", "dr_read", "segment_load", "msr_write"
  uint64_t address = 0;  // the site
  std::string site;      // its symbol+offset
};

struct Interception {
  enum class Verdict {
    kNotMine,     // the session dispatches the exit as usual
    kHandled,     // consumed; the guest resumes
    kGuestError,  // the guest did something the mechanism cannot handle: the run ends
    kHostError,   // an ioctl failed: the run ends
  };
  Verdict verdict = Verdict::kNotMine;
  std::string detail;              // kHandled: the exit's detail in the ledger
  std::optional<TrapRecord> trap;  // kHandled: the trap it was, if any
  uint64_t dr_loads = 0;           // hardware debug-register loads it caused
  std::string diagnosis;           // kGuestError / kHostError: one line
};

class ExitInterceptor {
 public:
  virtual ~ExitInterceptor() = default;
  virtual Interception Intercept(const VmExit& exit) = 0;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_EXIT_INTERCEPTOR_H_
