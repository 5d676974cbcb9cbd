// The sigvisor guest's own hypercalls, the ones every run serves: console output,
// exit, the phase markers, time reports and panics. GuestProtocol reads each
// argument block through GuestMemory (bounds-checked: the guest controls every
// field), validates it, and answers the run loop with a HypercallResult: how the run
// ended, a marker or a warning for the loop to apply in its order. Guest-controlled
// strings are copied, capped and never trusted to be terminated.
//
// The console is the run's (Session::ConsoleWrite), which the serial port feeds too:
// the protocol hands its text to `console`.
#ifndef SIGVISOR_VMM_RUN_GUEST_PROTOCOL_H_
#define SIGVISOR_VMM_RUN_GUEST_PROTOCOL_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor {

class GuestProtocol {
 public:
  // `memory` must outlive the protocol.
  GuestProtocol(const GuestMemory& memory, std::function<void(std::string_view)> console)
      : memory_(memory), console_(std::move(console)) {}

  // Registers console_write, exit, phase_begin, phase_end, time_report and panic in
  // `table`, and event when no one owns it (a run without fault injection: the
  // guest's reports are checked and dropped). The protocol must outlive the table's use.
  absl::Status Register(HypercallTable& table);

 private:
  HypercallResult ConsoleWrite(uint32_t args_gpa);
  HypercallResult Exit(uint32_t args_gpa);
  HypercallResult PhaseBegin(uint32_t args_gpa);
  HypercallResult PhaseEnd(uint32_t args_gpa);
  HypercallResult TimeReport(uint32_t args_gpa);
  HypercallResult Panic(uint32_t args_gpa);
  HypercallResult Event(uint32_t args_gpa);

  const GuestMemory& memory_;
  std::function<void(std::string_view)> console_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_GUEST_PROTOCOL_H_
