/* Kernel virtual <-> guest-physical addresses. The x86-64 kernel runs on the VMM's
 * identity map: a kernel pointer is its guest-physical address. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_ASM_PAGE_H_
#define SIGVISOR_ARCH_X86_64_GUEST_ASM_PAGE_H_

#include <stdint.h>

#define __pa(x) ((uintptr_t)(x))
#define __va(x) ((uintptr_t)(x))

#endif /* SIGVISOR_ARCH_X86_64_GUEST_ASM_PAGE_H_ */
