#include "arch/x86_64/vmm/cpu/phase_interrupt_block.h"

#include "absl/strings/str_format.h"

namespace sigvisor::x86 {

void PhaseInterruptBlock::OnPhaseMarker(const PhaseMarker& marker) { Set(marker.begin); }

void PhaseInterruptBlock::OnEnd(const RunEnd&) { Set(false); }

void PhaseInterruptBlock::Set(bool on) {
  if (absl::Status s = debug_.SetBlockInterrupts(GuestDebug::kBlockPhases, on);
      !s.ok() && warnings_.empty()) {
    warnings_.push_back(absl::StrFormat(
        "--block-phase-interrupts: KVM_SET_GUEST_DEBUG failed (%s): interrupts were not "
        "blocked in the phases from here on",
        s.message()));
  }
}

}  // namespace sigvisor::x86
