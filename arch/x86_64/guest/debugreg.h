/* Debug-register moves. Each `mov %reg, %dbN` here is a site the VMM's trap engine
 * finds and counts (seed 000 is about the one on the signal path). */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_DEBUGREG_H_
#define SIGVISOR_ARCH_X86_64_GUEST_DEBUGREG_H_

#include <stdint.h>

static inline void set_debugreg7(uint64_t value) {
  __asm__ volatile("mov %0, %%db7" : : "r"(value));
}

/* Loads one debug register (0-3, 6, 7); other indexes are ignored. */
static inline void set_debugreg(int index, uint64_t value) {
  switch (index) {
    case 0: __asm__ volatile("mov %0, %%db0" : : "r"(value)); break;
    case 1: __asm__ volatile("mov %0, %%db1" : : "r"(value)); break;
    case 2: __asm__ volatile("mov %0, %%db2" : : "r"(value)); break;
    case 3: __asm__ volatile("mov %0, %%db3" : : "r"(value)); break;
    case 6: __asm__ volatile("mov %0, %%db6" : : "r"(value)); break;
    case 7: set_debugreg7(value); break;
    default: break;
  }
}

#endif /* SIGVISOR_ARCH_X86_64_GUEST_DEBUGREG_H_ */
