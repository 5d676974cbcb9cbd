// The VMM's side of signal=pv (guest-kit/abi/sigvisor_abi.h, "Signal frames built by
// the VMM"; docs/pv-signals.md): the two hypercalls with which a signal=pv kernel
// has the VMM write a handler's rt frame and read it back at rt_sigreturn.
//
// Everything the guest hands over is untrusted. The frame is reached through the
// page-table root the kernel names, checked at every level as the CPU would check the
// kernel's own access (page_walk.h: TranslateUserRange), and written only once the
// whole frame has passed; any doubt declines, and the kernel then runs its own frame
// code, whose verdict (SIGSEGV for a bad frame) stands. Only an argument block outside
// guest RAM fails the run, as a malformed hypercall does.
//
// With `check` (run --check-signal-frames) the VMM writes nothing: it computes the
// frame and registers, lets the kernel build them, and compares byte for byte when
// the kernel reports back. Those calls are the instrument's, kept out of the exit
// ledger, so a checked run counts what the kernel's own path costs.
#ifndef SIGVISOR_ARCH_X86_64_VMM_SIGNAL_PV_SIGNAL_H_
#define SIGVISOR_ARCH_X86_64_VMM_SIGNAL_PV_SIGNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "arch/x86_64/vmm/signal/frame_builder.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/hypercall_table.h"
#include "vmm/run/signal_frame_counts.h"

namespace sigvisor::x86 {

class PvSignalFrames {
 public:
  // `memory` must outlive this object.
  PvSignalFrames(GuestMemory& memory, bool check) : memory_(memory) { counts_.checking = check; }

  // Takes SIGVISOR_HC_SIGNAL_FRAME and SIGVISOR_HC_SIGRETURN.
  absl::Status Register(HypercallTable& table);

  HypercallResult SignalFrame(uint32_t args_gpa);
  HypercallResult Sigreturn(uint32_t args_gpa);

  const SignalFrameCounts& counts() const { return counts_; }

 private:
  // --check-signal-frames: what the VMM computed, awaiting the kernel's report.
  struct PendingFrame {
    SignalFramePlan plan;
    uint64_t regs_gpa = 0;
    uint64_t page_table_gpa = 0;
    std::vector<uint8_t> before;  // the frame's bytes before the kernel wrote it
  };
  struct PendingSigreturn {
    SigreturnPlan plan;
    uint64_t regs_gpa = 0;
  };

  HypercallResult FrameAsked(uint32_t args_gpa, const sigvisor_hc_signal_frame& args);
  HypercallResult FrameBuilt(int32_t kernel_result);
  HypercallResult SigreturnAsked(uint32_t args_gpa, const sigvisor_hc_sigreturn& args);
  HypercallResult SigreturnBuilt(uint64_t mask, int32_t kernel_result);
  // Answers the call: `result` into the argument block at `result_gpa`.
  HypercallResult Answer(uint64_t nr, uint32_t args_gpa, uint64_t result_gpa, int32_t result);
  void Declined(const absl::Status& why);
  void Mismatch(std::string what);
  // --check-signal-frames: pt_regs at `regs_gpa` against what the VMM computed; a
  // difference is a mismatch of `what` ("signal 8", "rt_sigreturn").
  void CompareRegs(uint64_t regs_gpa, const PtRegs& expected, const std::string& what);
  absl::Status WriteFrame(const SignalFramePlan& plan, uint64_t page_table_gpa);

  GuestMemory& memory_;
  SignalFrameCounts counts_;
  std::optional<PendingFrame> pending_frame_;
  std::optional<PendingSigreturn> pending_sigreturn_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_SIGNAL_PV_SIGNAL_H_
