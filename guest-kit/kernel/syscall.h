/* System-call dispatch (the calling convention is in guest-kit/uapi/syscalls.h). */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_SYSCALL_H_
#define SIGVISOR_GUEST_KIT_KERNEL_SYSCALL_H_

#include "arch/x86_64/guest/pt_regs.h"

/* Runs the call in regs->rax with the arguments in rdi, rsi, rdx, r10, r8, r9 and
 * stores the result in regs->rax. */
void syscall_dispatch(struct pt_regs *regs);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_SYSCALL_H_ */
