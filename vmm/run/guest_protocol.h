// The sigvisor guest's own hypercalls, the ones every run serves: console output,
// exit, the phase markers, time reports, panics and the orders (the guest's quiescent
// point, where it asks for its init's command line). GuestProtocol reads each
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
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor {

class GuestProtocol {
 public:
  // `memory` must outlive the protocol.
  GuestProtocol(GuestMemory& memory, std::function<void(std::string_view)> console)
      : memory_(memory), console_(std::move(console)) {}

  // The run's orders: what the guest's init is told at its quiescent point (the run's
  // command line). Set before the run starts.
  void set_orders(std::string orders) { orders_ = std::move(orders); }
  // An SMP kernel's phase markers have its IPI counts after their own argument blocks
  // (sigvisor_hc_phase_begin_smp, sigvisor_hc_phase_end_smp): each marker then carries
  // those of the machine's `cpus` CPUs (PhaseMarker::guest_ipis). 0, the default: the
  // blocks are a uniprocessor kernel's. Set before the run.
  void set_marker_ipi_cpus(int cpus) { marker_ipi_cpus_ = cpus; }
  // Called at the guest's quiescent point (SIGVISOR_HC_ORDERS), before the orders are
  // written, with the call's argument block's guest-physical address. A result whose
  // verdict is not kContinue ends the run there, the orders unwritten (`sigvisor
  // snapshot` saves the VM then). Unset: the orders are answered at once.
  using QuiescentHook = std::function<HypercallResult(uint32_t args_gpa)>;
  void set_quiescent_hook(QuiescentHook hook) { quiescent_hook_ = std::move(hook); }
  // Writes the run's orders into the guest's request at `args_gpa` (buf_gpa/buf_len
  // read from it, bounds-checked through GuestMemory, capped at SIGVISOR_CMDLINE_MAX
  // and at buf_len - 1, NUL-terminated, `len` set). Also what a restored VM's board
  // calls, before its first KVM_RUN, for the request the snapshot was taken at.
  // InvalidArgument, and nothing written, for a malformed request (the block or the
  // buffer outside guest RAM, buf_len 0) or orders that do not fit the buffer: they
  // are refused, never truncated (that would change the workload unseen).
  absl::Status AnswerOrders(uint32_t args_gpa);

  // Registers console_write, exit, phase_begin, phase_end, time_report, panic and
  // orders in `table`, and event when no one owns it (a run without fault injection:
  // the guest's reports are checked and dropped). The protocol must outlive the
  // table's use.
  absl::Status Register(HypercallTable& table);

 private:
  HypercallResult ConsoleWrite(uint32_t args_gpa);
  HypercallResult Exit(uint32_t args_gpa);
  HypercallResult PhaseBegin(uint32_t args_gpa);
  HypercallResult PhaseEnd(uint32_t args_gpa);
  HypercallResult TimeReport(uint32_t args_gpa);
  HypercallResult Panic(uint32_t args_gpa);
  HypercallResult Event(uint32_t args_gpa);
  HypercallResult Orders(uint32_t args_gpa);

  GuestMemory& memory_;
  std::function<void(std::string_view)> console_;
  std::string orders_;
  int marker_ipi_cpus_ = 0;
  QuiescentHook quiescent_hook_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_GUEST_PROTOCOL_H_
