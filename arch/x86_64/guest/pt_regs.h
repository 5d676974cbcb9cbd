/* The register frame every kernel entry saves on the kernel stack, in the order
 * entry.S pushes it (Linux's struct pt_regs layout). */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_
#define SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_

#include <stdint.h>

struct pt_regs {
  uint64_t r15, r14, r13, r12, rbp, rbx;
  uint64_t r11, r10, r9, r8, rax, rcx, rdx, rsi, rdi;
  uint64_t vector;     /* pushed by the entry stub */
  uint64_t error_code; /* pushed by the CPU, or 0 by the stub */
  /* The hardware interrupt frame. */
  uint64_t rip, cs, rflags, rsp, ss;
};

static inline int user_mode(const struct pt_regs *regs) { return (regs->cs & 3) == 3; }

#endif /* SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_ */
