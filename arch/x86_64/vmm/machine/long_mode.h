// The x86-64 boot state sigvisor gives a guest: identity-mapped long mode at CPL0,
// the ABI's flat GDT and busy TSS, an IDT of limit 0, host-supported CPUID.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_LONG_MODE_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_LONG_MODE_H_

#include <linux/kvm.h>

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "vmm/kvm/kvm.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {

// Writes the boot page tables, GDT and TSS into guest RAM (below 1 MiB). Guest RAM
// is identity-mapped supervisor-only; page 0 is left not present.
absl::Status WriteBootTables(GuestMemory& memory);

// Puts the vCPU in 64-bit mode at `entry` with rdi = `boot_info_gpa` and installs
// `cpuid` (from KVM_GET_SUPPORTED_CPUID).
absl::Status SetUpVcpu(KvmVcpu& vcpu, uint64_t entry, uint64_t boot_info_gpa,
                       std::span<const kvm_cpuid_entry2> cpuid);

// Where an application processor of an SMP sigvisor kernel starts
// (SIGVISOR_HC_CPU_UP): the calling vCPU's system registers (CR0, CR3, CR4, EFER, GDT,
// IDT, segment registers, TR) at `rip` with `rsp`, rdi = `rdi`, rflags 0x2, the other
// general registers 0.
struct ApEntry {
  kvm_sregs sregs = {};  // the caller's (vCPU 0's) at the call
  uint64_t rip = 0;
  uint64_t rsp = 0;
  uint64_t rdi = 0;
};

// Enters `entry` on `vcpu`, an AP that has not run (mp_state UNINITIALIZED, made with
// the in-kernel irqchip): its own local APIC base, CR8 and pending interrupts stay its
// own (a LAPIC at its reset state), the rest of the system registers are the entry's;
// the SYSCALL MSRs as SetUpVcpu sets them; then mp_state RUNNABLE. vCPU ioctls: call it
// on the AP's own thread.
absl::Status EnterAp(KvmVcpu& vcpu, const ApEntry& entry);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_LONG_MODE_H_
