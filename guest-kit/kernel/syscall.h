/* System-call dispatch (the calling convention is in guest-kit/uapi/syscalls.h). */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_SYSCALL_H_
#define SIGVISOR_GUEST_KIT_KERNEL_SYSCALL_H_

#include "asm/ptrace.h"

/* Runs the call the registers name (asm/syscall.h: rax and rdi, rsi, rdx, r10 on
 * x86-64; v0 and a0-a3 on MIPS) and stores its result there. */
void syscall_dispatch(struct pt_regs *regs);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_SYSCALL_H_ */
