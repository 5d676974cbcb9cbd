/* The user programs' tiny C library: system calls, signals, printing, arguments. */
#ifndef SIGVISOR_GUEST_KIT_USER_ULIB_H_
#define SIGVISOR_GUEST_KIT_USER_ULIB_H_

#include <stddef.h>
#include <stdint.h>

#include "guest-kit/uapi/signal.h"
#include "guest-kit/uapi/syscalls.h"

/* syscall4(), the arch's system-call instruction and registers, and rdtsc(), its
 * cycle counter: asm/usyscall.h. */
#include "asm/usyscall.h"

static inline long syscall3(long nr, long a, long b, long c) { return syscall4(nr, a, b, c, 0); }

static inline long sys_read(int fd, void *buf, size_t len) {
  return syscall3(SYS_read, fd, (long)buf, (long)len);
}
static inline long sys_write(int fd, const void *buf, size_t len) {
  return syscall3(SYS_write, fd, (long)buf, (long)len);
}
static inline long sys_close(int fd) { return syscall3(SYS_close, fd, 0, 0); }
static inline long sys_pipe(int fds[2]) { return syscall3(SYS_pipe, (long)fds, 0, 0); }
static inline long sys_getpid(void) { return syscall3(SYS_getpid, 0, 0, 0); }
static inline long sys_getppid(void) { return syscall3(SYS_getppid, 0, 0, 0); }
static inline long sys_yield(void) { return syscall3(SYS_sched_yield, 0, 0, 0); }
static inline __attribute__((noreturn)) void sys_exit(int status) {
  syscall3(SYS_exit, status, 0, 0);
  __builtin_unreachable();
}
static inline long sys_wait(int pid, int *status) {
  return syscall4(SYS_wait4, pid, (long)status, 0, 0);
}
static inline long sys_kill(int pid, int sig) { return syscall3(SYS_kill, pid, sig, 0); }
static inline long sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  return syscall4(SYS_rt_sigaction, sig, (long)act, (long)old, sizeof(sigset_t));
}
static inline long sys_sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  return syscall4(SYS_rt_sigprocmask, how, (long)set, (long)old, sizeof(sigset_t));
}
static inline long sys_sigsuspend(const sigset_t *mask) {
  return syscall3(SYS_rt_sigsuspend, (long)mask, sizeof(sigset_t), 0);
}
static inline long sys_pause(void) { return syscall3(SYS_pause, 0, 0, 0); }
static inline long sys_spawn(const char *args) { return syscall3(SYS_spawn, (long)args, 0, 0); }
static inline long sys_set_debugreg(int index, unsigned long value) {
  return syscall3(SYS_set_debugreg, index, (long)value, 0);
}
static inline long sys_host_signals(int sig) { return syscall3(SYS_host_signals, sig, 0, 0); }
static inline long sys_sched_setaffinity(int pid, int cpu) {
  return syscall3(SYS_sched_setaffinity, pid, cpu, 0);
}
static inline long sys_phase_begin(const char *name, unsigned long ops, unsigned flags,
                                   int op_syscall) {
  return syscall4(SYS_phase_begin, (long)name, (long)ops, (long)flags, op_syscall);
}
static inline long sys_phase_end(void) { return syscall3(SYS_phase_end, 0, 0, 0); }

/* Starts a measured phase of `ops` operations, after an empty calibration phase
 * that lets the VMM subtract what the markers themselves cost (see
 * SIGVISOR_PHASE_CALIBRATION in guest-kit/abi/sigvisor_abi.h). `op_syscall` is the
 * system call each operation makes exactly once (SYS_*), by which fault injection
 * counts operations (docs/inject.md). */
void phase_begin(const char *name, unsigned long ops, int op_syscall);
static inline void phase_end(void) { sys_phase_end(); }

/* The signal restorer (arch/<arch>/start.S): rt_sigreturn. */
void __restore_rt(void);

/* Installs `handler` for `sig` with SA_RESTORER (where the arch has it) plus `flags`;
 * with SA_SIGINFO the handler is void (*)(int, siginfo_t *, void *). */
long sig_install(int sig, void *handler, uint64_t flags, sigset_t mask);

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The value of `key` in a "key=value key=value" string, copied into `out`; returns
 * 0 if the key is absent. */
int arg_get(const char *args, const char *key, char *out, size_t out_size);
/* The unsigned decimal value of `key`, or `fallback`. */
unsigned long arg_get_ulong(const char *args, const char *key, unsigned long fallback);

#endif /* SIGVISOR_GUEST_KIT_USER_ULIB_H_ */
