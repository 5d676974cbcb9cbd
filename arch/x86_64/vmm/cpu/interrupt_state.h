// What a vCPU holds of interrupts, in one line for a diagnosis: whether it is halted,
// whether it takes interrupts (RFLAGS.IF), and which vectors its local APIC has
// pending (IRR) and in service (ISR). At a timeout this tells a lost wake-up apart:
// an IPI that never arrived (nothing pending), one that arrived and was not delivered
// (pending beside a halted vCPU with interrupts on), one whose handler never sent its
// EOI (in service, blocking its vector and those below).
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_INTERRUPT_STATE_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_INTERRUPT_STATE_H_

#include <linux/kvm.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sigvisor::x86 {

struct InterruptState {
  std::optional<uint32_t> mp_state;  // KVM_MP_STATE_*; none where KVM gives none
  bool interrupts_enabled = false;   // RFLAGS.IF
  // The local APIC's vectors, ascending: KVM's in-kernel one's (LapicVectors of
  // KVM_GET_LAPIC) or the VMM's own; none where the vCPU has no local APIC.
  struct LapicVectorSets {
    std::vector<int> pending;     // IRR
    std::vector<int> in_service;  // ISR
  };
  std::optional<LapicVectorSets> lapic;
};

// What KVM's in-kernel local APIC holds (KVM_GET_LAPIC's register page).
InterruptState::LapicVectorSets VectorSetsOf(const kvm_lapic_state& lapic);

// The vectors whose bits are set in the 256-bit APIC register array at `offset`
// (0x100 ISR, 0x180 TMR, 0x200 IRR: eight 32-bit words, 16 bytes apart), ascending.
std::vector<int> LapicVectors(const kvm_lapic_state& lapic, size_t offset);

// "halted, interrupts on, LAPIC pending 0xfd, in service none".
std::string DescribeInterruptState(const InterruptState& state);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_INTERRUPT_STATE_H_
