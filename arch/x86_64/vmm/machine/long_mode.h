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

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_LONG_MODE_H_
