/* Bit searches the arch-neutral kernel needs. */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_BITOPS_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_BITOPS_H_

#include <stdint.h>

/* The index of the lowest set bit of `word` (not 0), with MIPS32's `clz`: isolate
 * the bit, then 31 - its leading zeros. */
static inline unsigned __ffs32(uint32_t word) {
  return 31 - (unsigned)__builtin_clz(word & -word);
}

static inline uint64_t __ffs64(uint64_t word) {
  uint32_t low = (uint32_t)word;
  return low ? __ffs32(low) : 32 + __ffs32((uint32_t)(word >> 32));
}

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_BITOPS_H_ */
