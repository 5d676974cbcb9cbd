/* Per-CPU descriptor tables: the kernel's own GDT, IDT and TSS. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_CPU_H_
#define SIGVISOR_ARCH_X86_64_GUEST_CPU_H_

#include <stdint.h>

/* Installs the kernel's GDT, TSS and IDT. Until this runs the VMM's boot IDT has
 * limit 0, so any exception triple-faults (and the VMM reports where). */
void cpu_init(void);

/* The stack the CPU switches to on a trap from user mode (TSS.RSP0). */
void cpu_set_kernel_stack(uint64_t rsp0);

/* smp=on: an AP installs its own GDT copy and TSS, and the shared IDT. */
void cpu_init_ap(int cpu);

/* Boot time: where CPL0 is emulated, KVM runs memset's `rep stosb` a byte at a time
 * (~0.5 us a byte), so the arch-neutral kernel does not clear memory it knows is
 * still as the VMM's loader left .bss, zero (task.c). */
#define ARCH_SKIP_CLEARING_FRESH_BSS 1

#endif /* SIGVISOR_ARCH_X86_64_GUEST_CPU_H_ */
