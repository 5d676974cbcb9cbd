// The guest's IDT as the VMM reads it: each present gate's vector, where the gate
// is (guest-virtual) and the handler it names. The tracer names kernel entries by
// their handlers; the kernel-entry stops redirect the gates and put them back; the
// SYSCALL completion watches the page-fault entry.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_IDT_GATES_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_IDT_GATES_H_

#include <linux/kvm.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "arch/x86_64/vmm/cpu/vcpu_state.h"

namespace sigvisor::x86 {

inline constexpr uint64_t kIdtGateBytes = 16;  // a 64-bit interrupt or trap gate

struct IdtGate {
  int vector = 0;
  uint64_t address = 0;  // guest-virtual, of the gate itself
  uint64_t handler = 0;  // the offset the gate names
};

// The gate of `vector` if it is present and readable.
std::optional<IdtGate> ReadIdtGate(const VcpuState& cpu, const kvm_sregs& sregs, int vector);

// The present gates of the IDT that `sregs` names (at most 256), read under
// sregs.cr3; gates that cannot be read are left out.
std::vector<IdtGate> ReadIdtGates(const VcpuState& cpu, const kvm_sregs& sregs);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_IDT_GATES_H_
