/* Per-CPU descriptor tables: the kernel's own GDT, IDT and TSS. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_CPU_H_
#define SIGVISOR_ARCH_X86_64_GUEST_CPU_H_

#include <stdint.h>

/* Installs the kernel's GDT, TSS and IDT. Until this runs the VMM's boot IDT has
 * limit 0, so any exception triple-faults (and the VMM reports where). */
void cpu_init(void);

/* The stack the CPU switches to on a trap from user mode (TSS.RSP0). */
void cpu_set_kernel_stack(uint64_t rsp0);

#endif /* SIGVISOR_ARCH_X86_64_GUEST_CPU_H_ */
