/* User-side system calls and cycle counter on MIPS o32. */
#ifndef SIGVISOR_GUEST_KIT_USER_ARCH_MIPS_ASM_USYSCALL_H_
#define SIGVISOR_GUEST_KIT_USER_ARCH_MIPS_ASM_USYSCALL_H_

#include <stdint.h>

/* `syscall` with v0 = number, a0-a3 = arguments; the kernel returns the result in
 * v0 with a3 = 0, or the errno in v0 with a3 = 1 (as Linux MIPS), made -errno here.
 * The clobbers are the registers Linux may change across a system call. */
static inline long syscall4(long nr, long a, long b, long c, long d) {
  register long v0 __asm__("$2") = nr;
  register long a0 __asm__("$4") = a;
  register long a1 __asm__("$5") = b;
  register long a2 __asm__("$6") = c;
  register long a3 __asm__("$7") = d;
  __asm__ volatile("syscall"
                   : "+r"(v0), "+r"(a3)
                   : "r"(a0), "r"(a1), "r"(a2)
                   : "memory", "$1", "$3", "$8", "$9", "$10", "$11", "$12", "$13", "$14",
                     "$15", "$24", "$25", "hi", "lo");
  return a3 ? -v0 : v0;
}

/* The cycle counter: Count through `rdhwr $2` (the kernel enables it in HWREna). */
static inline uint64_t rdtsc(void) {
  uint32_t count;
  __asm__ volatile(".set push\n\t.set mips32r2\n\trdhwr %0, $2\n\t.set pop" : "=r"(count));
  return count;
}

#endif /* SIGVISOR_GUEST_KIT_USER_ARCH_MIPS_ASM_USYSCALL_H_ */
