/* CPU set-up (Status, TLB, HWREna) and the stack an exception from user mode uses. */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_CPU_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_CPU_H_

#include <stdint.h>

void cpu_init(void);

/* entry.S switches to this stack on an exception from user mode. */
extern uintptr_t mips_kernel_sp;
static inline void cpu_set_kernel_stack(uintptr_t sp) { mips_kernel_sp = sp; }

/* The number of cores: a3 at boot under sigvisor, 1 under QEMU. */
extern unsigned mips_num_cores;

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_CPU_H_ */
