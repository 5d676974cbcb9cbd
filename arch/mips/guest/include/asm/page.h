/* Kernel virtual <-> physical: the kernel runs in kseg0, physical + 0x80000000,
 * unmapped and cached; devices are reached through kseg1 (+ 0xa0000000, uncached). */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_PAGE_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_PAGE_H_

#include <stdint.h>

#define KSEG0 0x80000000u
#define KSEG1 0xa0000000u
#define __pa(x) ((uintptr_t)(x) & 0x1fffffffu)
#define __va(x) ((uintptr_t)(x) | KSEG0)
#define KSEG1ADDR(phys) ((volatile void *)((uintptr_t)(phys) | KSEG1))

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_PAGE_H_ */
