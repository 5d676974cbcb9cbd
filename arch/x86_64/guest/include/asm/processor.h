/* The user register state of a freshly exec'd program (Linux's start_thread). */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_ASM_PROCESSOR_H_
#define SIGVISOR_ARCH_X86_64_GUEST_ASM_PROCESSOR_H_

#include <stdint.h>

#include "arch/x86_64/guest/pt_regs.h"
#include "guest-kit/abi/sigvisor_abi.h"

/* `regs` is zeroed; the program starts at `entry` with rdi = `user_arg`, the
 * argument string at the top of its stack. */
static inline void start_thread(struct pt_regs *regs, uint64_t entry, uint64_t user_arg) {
  regs->rip = entry;
  regs->cs = SIGVISOR_SEL_USER_CS;
  regs->rflags = 0x202; /* IF, reserved bit 1 */
  regs->rsp = user_arg - 8; /* 16-byte aligned minus a return-address slot, as at a call */
  regs->ss = SIGVISOR_SEL_USER_DS;
  regs->rdi = user_arg;
}

#endif /* SIGVISOR_ARCH_X86_64_GUEST_ASM_PROCESSOR_H_ */
