/* User-side system calls and cycle counter on x86-64. */
#ifndef SIGVISOR_GUEST_KIT_USER_ARCH_X86_64_ASM_USYSCALL_H_
#define SIGVISOR_GUEST_KIT_USER_ARCH_X86_64_ASM_USYSCALL_H_

#include <stdint.h>

/* System calls go through `int $0x80` (see arch/x86_64/guest/traps.c). */
static inline long syscall4(long nr, long a, long b, long c, long d) {
  register long r10 __asm__("r10") = d;
  long ret;
  __asm__ volatile("int $0x80"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "memory", "rcx", "r11");
  return ret;
}
static inline uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

#endif /* SIGVISOR_GUEST_KIT_USER_ARCH_X86_64_ASM_USYSCALL_H_ */
