/*
 * The guest kernel's system-call interface, shared by the kernel and user programs.
 *
 * Numbers and register conventions are Linux x86-64's (rax = number; rdi, rsi, rdx,
 * r10, r8, r9 = arguments; rax = result, -errno on failure), so user code reads like
 * user code. The instruction is `int $0x80` (see arch/x86_64/guest/traps.c for why).
 */
#ifndef SIGVISOR_GUEST_KIT_UAPI_SYSCALLS_H_
#define SIGVISOR_GUEST_KIT_UAPI_SYSCALLS_H_

#define SYS_read 0
#define SYS_write 1
#define SYS_getpid 39
#define SYS_exit 60

/* sigvisor's own calls: measured-phase markers (passed on to the VMM). */
#define SYS_phase_begin 500 /* (const char *name, unsigned long ops, unsigned flags) */
#define SYS_phase_end 501   /* () */

#define EFAULT 14
#define EINVAL 22
#define ENOSYS 38
#define EBADF 9

/* Where user programs live: the second GiB of every address space. */
#define USER_BASE 0x40000000ul
#define USER_TOP 0x80000000ul
#define USER_STACK_TOP 0x7fff0000ul
#define USER_STACK_PAGES 4

#endif /* SIGVISOR_GUEST_KIT_UAPI_SYSCALLS_H_ */
