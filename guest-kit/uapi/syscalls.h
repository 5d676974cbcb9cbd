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
#define SYS_close 3
#define SYS_rt_sigaction 13
#define SYS_rt_sigprocmask 14
#define SYS_rt_sigreturn 15
#define SYS_pipe 22
#define SYS_sched_yield 24
#define SYS_pause 34
#define SYS_getpid 39
#define SYS_exit 60
#define SYS_wait4 61
#define SYS_kill 62
#define SYS_getppid 110
#define SYS_rt_sigsuspend 130
/* smp=on kernels: pins task `pid` (0: the caller) to CPU `cpu`. Linux's number and
 * name, but its argument is the one CPU, not a mask: (int pid, int cpu). -EINVAL for
 * a CPU the machine lacks (so on one CPU for any but 0); -ENOSYS on a kernel built
 * for one CPU. */
#define SYS_sched_setaffinity 203

/* sigvisor's own calls. */
#define SYS_phase_begin 500 /* (const char *name, unsigned long ops, unsigned flags, int op_syscall) */
#define SYS_phase_end 501   /* () */
/* Starts the built-in program again as a new process with argument string `args`
 * (posix_spawn-like: no fork, whose page copying is expensive at an emulated CPL0).
 * The child shares the parent's open files. Returns the child's pid. */
#define SYS_spawn 502 /* (const char *args) */
/* Sets the calling task's debug register `index` (0-3, 6, 7), as ptrace would. */
#define SYS_set_debugreg 503 /* (int index, unsigned long value) */
/* How many signals `signo` (1-64) the host has sent the calling task since it
 * started (fault injection, `--inject sig=`: docs/inject.md) that the kernel took: a
 * signal sent from inside the guest never counts. A count that only grows, like
 * Linux's per-task counters in /proc/PID/status: read it before and after what is
 * checked. Taken is not delivered: a classic signal that finds the same signal
 * already pending merges with it, and an ignored one is dropped. -EINVAL for another
 * signo. */
#define SYS_host_signals 504 /* (int signo) */

#define EPERM 1
#define ESRCH 3
#define EINTR 4
#define EBADF 9
#define ECHILD 10
#define EAGAIN 11
#define ENOMEM 12
#define EFAULT 14
#define EINVAL 22
#define EMFILE 24
#define EPIPE 32
#define ENOSYS 38

/* Where user programs live: the second GiB of every address space. */
#define USER_BASE 0x40000000ul
#define USER_TOP 0x80000000ul
#define USER_STACK_TOP 0x7fff0000ul
/* MIPS: the vdso page (the signal-return trampoline), read-only in every process at
 * the last user page, above the stack (arch/mips/guest/vdso.c). */
#define USER_VDSO_BASE 0x7ffff000ul
#define USER_STACK_PAGES 4

#endif /* SIGVISOR_GUEST_KIT_UAPI_SYSCALLS_H_ */
