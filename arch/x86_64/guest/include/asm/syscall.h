/* The system-call registers (Linux's asm/syscall.h): rax = number; rdi, rsi, rdx,
 * r10 = arguments; rax = result, -errno on failure. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_ASM_SYSCALL_H_
#define SIGVISOR_ARCH_X86_64_GUEST_ASM_SYSCALL_H_

#include <stdint.h>

#include "arch/x86_64/guest/pt_regs.h"

static inline uint64_t syscall_get_nr(const struct pt_regs *regs) { return regs->rax; }

static inline uint64_t syscall_get_arg(const struct pt_regs *regs, int i) {
  switch (i) {
    case 0: return regs->rdi;
    case 1: return regs->rsi;
    case 2: return regs->rdx;
    default: return regs->r10;
  }
}

static inline void syscall_set_return_value(struct pt_regs *regs, int64_t ret) {
  regs->rax = (uint64_t)ret;
}

#endif /* SIGVISOR_ARCH_X86_64_GUEST_ASM_SYSCALL_H_ */
