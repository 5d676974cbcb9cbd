/* System calls: numbers and conventions in guest-kit/uapi/syscalls.h. */
#include "guest-kit/kernel/syscall.h"

#include "asm/syscall.h"
#include "asm/uaccess.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/file.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/signal.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/syscalls.h"

int64_t sys_rt_sigreturn(struct pt_regs *regs); /* arch/<arch>/guest/signal.c */

/* Copies a NUL-terminated user string of at most `size` - 1 bytes. */
static int64_t copy_string_from_user(char *to, uint64_t from, uint64_t size) {
  for (uint64_t i = 0; i < size; i++) {
    char c;
    if (get_user(c, (const char *)(uintptr_t)(from + i))) return -EFAULT;
    to[i] = c;
    if (!c) return (int64_t)i;
  }
  return -EINVAL;
}

static int64_t sys_phase_begin(uint64_t name, uint64_t ops, uint64_t flags, int64_t op_syscall) {
  char copy[SIGVISOR_PHASE_NAME_MAX];
  int64_t len = copy_string_from_user(copy, name, sizeof(copy));
  if (len < 0) return len;
  hc_phase_begin(copy, ops, (uint32_t)flags, (int)op_syscall);
  return 0;
}

static int64_t sys_spawn(uint64_t args) {
  char copy[SIGVISOR_CMDLINE_MAX];
  int64_t len = copy_string_from_user(copy, args, sizeof(copy));
  if (len < 0) return len;
  return task_spawn(copy);
}

static int64_t sys_wait4(int pid, uint64_t status_ptr) {
  int status = 0;
  int child = task_wait(pid, &status);
  if (child > 0 && status_ptr && put_user(status, (int *)(uintptr_t)status_ptr)) return -EFAULT;
  return child;
}

static int64_t sys_set_debugreg(int index, uint64_t value) {
  if (index < 0 || index > 7 || index == 4 || index == 5) return -EINVAL;
  current->debugreg[index] = value;
  return 0; /* loaded on the way to the task's next signal handler or switch */
}

/* The call's arguments, read where each case uses them (asm/syscall.h). */
#define ARG(i) syscall_get_arg(regs, i)

static int64_t sys_host_signals(int signo) {
  if (signo < 1 || signo > NSIG) return -EINVAL;
  return current->host_signals[signo - 1];
}

/* The calls no measured operation makes, kept out of the switch below: a new case
 * there reshapes the compare tree the compiler builds for it, which every call
 * walks, and so moves per-op instruction counts that runs report exactly (a case
 * for 504 made x86-64 rt_sigsuspend 3 instructions cheaper). Out of line, so that
 * the default case stays one call. */
static __attribute__((noinline)) int64_t syscall_unmeasured(struct pt_regs *regs) {
  if (syscall_get_nr(regs) == SYS_host_signals) return sys_host_signals((int)ARG(0));
#if CONFIG_SMP
  if (syscall_get_nr(regs) == SYS_sched_setaffinity)
    return sys_sched_setaffinity((int)ARG(0), (int64_t)ARG(1));
#endif
  return -ENOSYS;
}

void syscall_dispatch(struct pt_regs *regs) {
  int64_t ret;
  switch (syscall_get_nr(regs)) {
    case SYS_read: ret = sys_read((int)ARG(0), ARG(1), ARG(2)); break;
    case SYS_write: ret = sys_write((int)ARG(0), ARG(1), ARG(2)); break;
    case SYS_close: ret = sys_close((int)ARG(0)); break;
    case SYS_pipe: ret = sys_pipe(ARG(0)); break;
    case SYS_getpid: ret = current->pid; break;
    case SYS_getppid: ret = current->parent_pid; break;
    case SYS_sched_yield: schedule(); ret = 0; break;
    case SYS_exit: task_exit((int)(ARG(0) & 0xff) << 8);
    case SYS_wait4: ret = sys_wait4((int)ARG(0), ARG(1)); break;
    case SYS_kill: ret = sys_kill((int)ARG(0), (int)ARG(1)); break;
    case SYS_rt_sigaction:
      ret = sys_rt_sigaction((int)ARG(0), ARG(1), ARG(2), ARG(3));
      break;
    case SYS_rt_sigprocmask:
      ret = sys_rt_sigprocmask((int)ARG(0), ARG(1), ARG(2), ARG(3));
      break;
    case SYS_rt_sigreturn: ret = sys_rt_sigreturn(regs); break;
    case SYS_rt_sigsuspend: ret = sys_rt_sigsuspend(ARG(0), ARG(1)); break;
    case SYS_pause: ret = sys_pause(); break;
    case SYS_phase_begin:
      ret = sys_phase_begin(ARG(0), ARG(1), ARG(2), (int64_t)(int)ARG(3));
      break;
    case SYS_phase_end: hc_phase_end(); ret = 0; break;
    case SYS_spawn: ret = sys_spawn(ARG(0)); break;
    case SYS_set_debugreg: ret = sys_set_debugreg((int)ARG(0), ARG(1)); break;
    default: ret = syscall_unmeasured(regs); break;
  }
  syscall_set_return_value(regs, ret);
}
