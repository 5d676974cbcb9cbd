/* The user register state of a freshly exec'd program (Linux's start_thread). */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_PROCESSOR_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_PROCESSOR_H_

#include <stdint.h>

#include "asm/ptrace.h"

/* `regs` is zeroed; the program starts at `entry` in user mode with a0 = `user_arg`
 * (the argument string at the top of its stack) and sp below it, leaving the o32
 * argument save area, 8-byte aligned. */
static inline void start_thread(struct pt_regs *regs, uint64_t entry, uint64_t user_arg) {
  regs->cp0_epc = (uint32_t)entry;
  regs->regs[25] = (uint32_t)entry; /* t9: the entry address, as the ABI has it */
  regs->regs[29] = ((uint32_t)user_arg & ~7u) - 16;
  regs->regs[4] = (uint32_t)user_arg;
  regs->cp0_status = ST0_KSU_USER | ST0_EXL; /* eret clears EXL: user mode */
}

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_PROCESSOR_H_ */
