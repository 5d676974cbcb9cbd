// One injection as it happened: what, when, where in the guest, and what came of it.
// Filled by the arch's injector during a run; reported in text and in JSON
// (`injections[]`, docs/schema/sigvisor.run-2.schema.json).
#ifndef SIGVISOR_VMM_INJECT_INJECTION_RECORD_H_
#define SIGVISOR_VMM_INJECT_INJECTION_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace sigvisor {

enum class InjectionOutcome {
  kNotReached,  // the trigger never happened
  kNoEffect,    // injected, but no fault, signal or repair followed before the end
  kDelivered,   // the resulting signal reached a handler in the task
  kRepaired,    // the guest repaired the fault transparently (paged the page back in)
  kTaskKilled,  // the resulting signal's default action ended the task
  kGuestPanic,  // the guest kernel did not survive it
};

inline std::string_view InjectionOutcomeName(InjectionOutcome outcome) {
  switch (outcome) {
    case InjectionOutcome::kNotReached: return "not_reached";
    case InjectionOutcome::kNoEffect: return "no_effect";
    case InjectionOutcome::kDelivered: return "delivered";
    case InjectionOutcome::kRepaired: return "repaired";
    case InjectionOutcome::kTaskKilled: return "task_killed";
    case InjectionOutcome::kGuestPanic: return "guest_panic";
  }
  return "unknown";
}

struct InjectionRecord {
  std::string spec;          // the --inject text it came from
  uint64_t sequence = 0;     // 1-based, in the order injections happened (or were planned)
  std::string action;        // what was done, e.g. "#DE at user rip", "SIGUSR1 to pid 1"
  // When: the phase and operation it landed in ("" / 0 when outside a phase), and
  // how many VM exits the run had taken by then.
  std::string phase;
  uint64_t op = 0;
  uint64_t exit_index = 0;
  // Where the guest was when it was injected.
  uint64_t rip = 0;
  std::string symbol;  // symbol+offset of rip, or "" (user code)
  int cpl = 0;
  uint64_t address = 0;  // the page (page injections) or CR2 (#PF); 0 otherwise
  InjectionOutcome outcome = InjectionOutcome::kNotReached;
  int signal = 0;        // the signal it led to (0: none)
  uint64_t si_addr = 0;  // that signal's si_addr, when an exception raised it
  std::string detail;    // one line on the outcome
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_INJECT_INJECTION_RECORD_H_
