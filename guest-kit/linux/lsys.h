/*
 * The Linux x86-64 system calls the guest programs make, as raw `syscall`
 * instructions (no C library: the programs are static and freestanding), and the
 * kernel's own layouts of the structures they pass: struct sigaction as
 * rt_sigaction takes it, siginfo_t and the ucontext a SA_SIGINFO handler gets.
 * Numbers and layouts are Linux's x86-64 ABI (arch/x86/entry/syscalls/syscall_64.tbl,
 * include/uapi/asm-generic/siginfo.h, arch/x86/include/uapi/asm/sigcontext.h).
 * Assembly includes it for the numbers only.
 */
#ifndef SIGVISOR_GUEST_KIT_LINUX_LSYS_H_
#define SIGVISOR_GUEST_KIT_LINUX_LSYS_H_

#define SYS_read 0
#define SYS_write 1
#define SYS_close 3
#define SYS_rt_sigaction 13
#define SYS_rt_sigprocmask 14
#define SYS_rt_sigreturn 15
#define SYS_pipe 22
#define SYS_getpid 39
#define SYS_fork 57
#define SYS_exit 60
#define SYS_wait4 61
#define SYS_kill 62
#define SYS_getuid 102
#define SYS_ioperm 173
#define SYS_rt_sigsuspend 130
#define SYS_reboot 169
#define SYS_sched_setaffinity 203
#define SYS_rt_sigqueueinfo 129

#define EINTR 4
#define ECHILD 10

#define SIGILL 4
#define SIGTRAP 5
#define SIGFPE 8
#define SIGUSR1 10
#define SIGSEGV 11
#define SIGUSR2 12
#define SIGRTMIN 34

#define SA_SIGINFO 0x4ul
#define SA_RESTORER 0x04000000ul

#define SIG_BLOCK 0
#define SIG_UNBLOCK 1
#define SIG_SETMASK 2

#define SI_KERNEL 0x80
#define SI_QUEUE (-1)
#define ILL_ILLOPN 2
#define FPE_INTDIV 1
#define SEGV_MAPERR 1
#define SEGV_ACCERR 2

#define LINUX_REBOOT_MAGIC1 0xfee1deadu
#define LINUX_REBOOT_MAGIC2 672274793u
#define LINUX_REBOOT_CMD_POWER_OFF 0x4321fedcu

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>

typedef uint64_t sigset_t; /* the kernel's: one bit per signal, signal n at bit n-1 */
#define SIGSET_BYTES 8

static inline sigset_t sigmask(int sig) { return 1ull << (sig - 1); }

/* rt_sigaction's struct (not the C library's): the restorer is mandatory on x86-64. */
struct kernel_sigaction {
  void *handler;
  uint64_t flags;
  void (*restorer)(void);
  sigset_t mask;
};

typedef struct {
  int si_signo;
  int si_errno;
  int si_code;
  int pad;
  union {
    uint64_t si_addr; /* faults */
    struct {
      int32_t si_pid; /* kill, sigqueue */
      uint32_t si_uid;
      uint64_t si_value; /* sigqueue */
    } rt;
    char bytes[112];
  } u;
} siginfo_t;

/* The general registers of struct sigcontext, in its order. */
struct sigcontext_regs {
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
};

typedef struct {
  uint64_t uc_flags;
  uint64_t uc_link;
  uint64_t ss_sp;
  uint64_t ss_flags_and_pad;
  uint64_t ss_size;
  struct sigcontext_regs uc_mcontext; /* followed by segments, err, trapno, ... */
} ucontext_t;

#define WIFEXITED(s) (((s) & 0x7f) == 0)
#define WEXITSTATUS(s) (((s) >> 8) & 0xff)
#define WIFSIGNALED(s) (((s) & 0x7f) != 0 && ((s) & 0x7f) != 0x7f)
#define WTERMSIG(s) ((s) & 0x7f)

static inline long linux_syscall6(long nr, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}

#define SYSCALL0(nr) linux_syscall6((nr), 0, 0, 0, 0, 0, 0)
#define SYSCALL1(nr, a) linux_syscall6((nr), (long)(a), 0, 0, 0, 0, 0)
#define SYSCALL2(nr, a, b) linux_syscall6((nr), (long)(a), (long)(b), 0, 0, 0, 0)
#define SYSCALL3(nr, a, b, c) linux_syscall6((nr), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYSCALL4(nr, a, b, c, d) \
  linux_syscall6((nr), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

static inline long sys_read(int fd, void *buf, size_t n) { return SYSCALL3(SYS_read, fd, buf, n); }
static inline long sys_write(int fd, const void *buf, size_t n) {
  return SYSCALL3(SYS_write, fd, buf, n);
}
static inline long sys_close(int fd) { return SYSCALL1(SYS_close, fd); }
static inline long sys_pipe(int fds[2]) { return SYSCALL1(SYS_pipe, fds); }
static inline long sys_getpid(void) { return SYSCALL0(SYS_getpid); }
static inline long sys_getuid(void) { return SYSCALL0(SYS_getuid); }
static inline long sys_fork(void) { return SYSCALL0(SYS_fork); }
static inline long sys_kill(int pid, int sig) { return SYSCALL2(SYS_kill, pid, sig); }
static inline long sys_wait(int pid, int *status) {
  return SYSCALL4(SYS_wait4, pid, status, 0, 0);
}
static inline long sys_sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  return SYSCALL4(SYS_rt_sigprocmask, how, set, old, SIGSET_BYTES);
}
static inline long sys_sigsuspend(const sigset_t *mask) {
  return SYSCALL2(SYS_rt_sigsuspend, mask, SIGSET_BYTES);
}
static inline long sys_sigaction(int sig, const struct kernel_sigaction *act,
                                 struct kernel_sigaction *old) {
  return SYSCALL4(SYS_rt_sigaction, sig, act, old, SIGSET_BYTES);
}
static inline long sys_sigqueueinfo(int pid, int sig, const siginfo_t *info) {
  return SYSCALL3(SYS_rt_sigqueueinfo, pid, sig, info);
}
static inline long sys_ioperm(unsigned long from, unsigned long num, int on) {
  return SYSCALL3(SYS_ioperm, from, num, on);
}
/* Pins the calling task to CPU `cpu` alone (< 64): 0, or -EINVAL where that CPU is not
 * online (a kernel on one CPU) or not allowed to it. */
static inline long sys_pin_to_cpu(unsigned cpu) {
  const uint64_t mask = 1ull << cpu;
  return SYSCALL3(SYS_sched_setaffinity, 0, sizeof(mask), &mask);
}
static inline long sys_reboot(unsigned cmd) {
  return SYSCALL4(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, cmd, 0);
}
__attribute__((noreturn)) static inline void sys_exit(int status) {
  SYSCALL1(SYS_exit, status);
  __builtin_unreachable();
}

static inline uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

#endif /* __ASSEMBLER__ */

#endif /* SIGVISOR_GUEST_KIT_LINUX_LSYS_H_ */
