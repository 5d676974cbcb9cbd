// run --block-phase-interrupts: no interrupt is injected into the guest between a
// phase's BEGIN and END markers (KVM_GUESTDBG_BLOCKIRQ, through GuestDebug), so that a
// kernel with timers (Linux) spends each measured phase on the phase alone and its
// kernel instructions per op are the same in every sample, as the bundled kernel's
// (which has no timer) always are.
//
// What the guest loses: for the length of a phase no interrupt reaches it. The LAPIC
// timer's ticks stay pending and the first is taken right after the END marker (the
// ones in between are lost, as after any long interrupts-off section: jiffies catch up
// from the clocksource); nothing preempts the phase, and a device interrupt (the
// console's) waits too. Calibration phases are blocked alike, so that the markers'
// own cost, which the calibration subtracts, is measured the same way.
//
// An observer only: it takes no exit, and asks for the block at each BEGIN marker and
// lifts it at each END and at the end of the run, after the marker's exit is handled
// and before the guest runs on.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_PHASE_INTERRUPT_BLOCK_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_PHASE_INTERRUPT_BLOCK_H_

#include <string>
#include <vector>

#include "arch/x86_64/vmm/cpu/guest_debug.h"
#include "vmm/run/exit_interceptor.h"

namespace sigvisor::x86 {

class PhaseInterruptBlock : public ExitInterceptor {
 public:
  // `debug` must outlive this object.
  explicit PhaseInterruptBlock(GuestDebug& debug) : debug_(debug) {}

  Interception Intercept(const VmExit&) override { return {}; }
  void OnPhaseMarker(const PhaseMarker& marker) override;
  void OnEnd(const RunEnd&) override;
  std::vector<std::string> Warnings() override { return warnings_; }

 private:
  void Set(bool on);

  GuestDebug& debug_;
  std::vector<std::string> warnings_;  // a failed KVM_SET_GUEST_DEBUG, once
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_PHASE_INTERRUPT_BLOCK_H_
