/* Cross-core I-cache maintenance for the signal trampoline (smp.c). */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_SMP_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_SMP_H_

#include <stdint.h>

/* Makes the instructions just written at `user_address` (within one I-cache line)
 * visible to instruction fetch on every core: `synci` here, and on each other core
 * `cache Hit_Invalidate_I` by IPI, waiting for every acknowledgement. */
void flush_cache_sigtramp(uintptr_t user_address);

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_SMP_H_ */
