/* The o32 system-call registers (Linux's asm/syscall.h): v0 = number, a0-a3 =
 * arguments; the result in v0 with a3 = 0, or the positive errno in v0 with a3 = 1. */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_SYSCALL_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_SYSCALL_H_

#include <stdint.h>

#include "asm/ptrace.h"

#define REG_V0 2
#define REG_A0 4
#define REG_A3 7

static inline uint32_t syscall_get_nr(const struct pt_regs *regs) { return regs->regs[REG_V0]; }

static inline uint32_t syscall_get_arg(const struct pt_regs *regs, int i) {
  return regs->regs[REG_A0 + i];
}

static inline void syscall_set_return_value(struct pt_regs *regs, int64_t ret) {
  if (ret < 0 && ret >= -4095) {
    regs->regs[REG_V0] = (uint32_t)-ret;
    regs->regs[REG_A3] = 1;
  } else {
    regs->regs[REG_V0] = (uint32_t)ret;
    regs->regs[REG_A3] = 0;
  }
}

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_SYSCALL_H_ */
