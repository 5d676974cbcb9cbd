/* Bit searches the arch-neutral kernel needs. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_ASM_BITOPS_H_
#define SIGVISOR_ARCH_X86_64_GUEST_ASM_BITOPS_H_

#include <stdint.h>

/* The index of the lowest set bit of `word` (not 0). `bsf`, not tzcnt: see
 * guest.bzl. */
static inline uint64_t __ffs64(uint64_t word) {
  uint64_t bit;
  __asm__("bsfq %1, %0" : "=r"(bit) : "rm"(word));
  return bit;
}

#endif /* SIGVISOR_ARCH_X86_64_GUEST_ASM_BITOPS_H_ */
