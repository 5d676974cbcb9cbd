/* Tasks: an address space, a kernel stack, open files, signal state, a parent. */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_TASK_H_
#define SIGVISOR_GUEST_KIT_KERNEL_TASK_H_

#include <stdint.h>

#include "asm/percpu.h"
#include "asm/ptrace.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/file.h"
#include "guest-kit/kernel/signal_types.h"

#define MAX_TASKS 8
#define TASK_NAME_MAX 16
#define KERNEL_STACK_SIZE (4 * 4096)

enum task_state {
  TASK_UNUSED = 0,
  TASK_RUNNABLE,
  TASK_SLEEPING, /* interruptible: a signal wakes it */
  TASK_ZOMBIE,
};

struct task {
  int pid;
  int parent_pid;
  enum task_state state;
  char name[TASK_NAME_MAX];
  uintptr_t page_table;      /* root of the address space (arch/<arch>/guest paging) */
  uintptr_t kernel_stack_top;
  uintptr_t saved_rsp;       /* kernel stack pointer while switched out */
  const void *wait_channel;  /* what a sleeping task waits for */
  int exit_code;             /* wait status (Linux encoding) once a zombie */
  uint64_t debugreg[8];      /* DR0-3, DR6, DR7 as the task set them (x86-64) */
  uint64_t fault_address;    /* the task's last faulting address (cr2, BadVAddr) */
  struct signal_state signal;
  struct file *files[MAX_FILES];
  /* Signals the host sent this task (fault injection, inject.c), by number: what
   * SYS_host_signals reads. Last, and counted only where a host request is served,
   * so that no signal path of the kernel does any work for it. */
  uint32_t host_signals[NSIG];
#if CONFIG_SMP
  /* The one CPU the task runs on (smp=on): inherited at spawn, set by
   * sched_setaffinity. After everything else, so the other builds' layout is as it
   * was. */
  int cpu;
#endif
};

/* The running task (per-CPU data: see the arch's asm/percpu.h). */
#define current (this_cpu_read(current_task))

/* The pt_regs a task's trap from user mode saved (top of its kernel stack). */
static inline struct pt_regs *task_pt_regs(struct task *task) {
  return (struct pt_regs *)(task->kernel_stack_top - sizeof(struct pt_regs));
}

/* Creates pid 1 running the built-in program with `args`; does not return. */
void task_start_init(const char *args) __attribute__((noreturn));

/* A new process running the built-in program with `args` (its open files shared
 * with the caller's). Returns its pid or a negative errno. */
int task_spawn(const char *args);

struct task *task_find(int pid);

/* Ends the current task with wait status `status`; ending init ends the guest. */
void task_exit(int status) __attribute__((noreturn));

/* Waits for a child (`pid` > 0: that one; -1: any) to end; stores its status. */
int task_wait(int pid, int *status);

/* Gives the CPU to the next runnable task (round robin); returns when this task is
 * chosen again. Panics if no task can run (smp=on with several CPUs: idles). */
void schedule(void);

/* Sleeps until wake_up(channel) or a signal arrives. The caller re-checks its
 * condition and signal_pending() in a loop around it. */
void sleep_on(const void *channel);
void wake_up(const void *channel);

/* Makes a sleeping task runnable because a signal arrived for it (smp=on: and kicks
 * it where it runs on another CPU, smp.h). */
void signal_wake_up(struct task *task);

#if CONFIG_SMP
/* smp=on. Pins task `pid` (0: the caller) to `cpu`; the caller moving itself switches
 * away at once and runs on `cpu` from then on. -EINVAL for a CPU the machine lacks. */
int64_t sys_sched_setaffinity(int pid, int64_t cpu);
/* Prepares CPU `cpu`'s idle task (its stack: an AP starts on its top). */
void idle_task_init(int cpu);
/* The idle loop: runs this CPU's runnable tasks; halts, without the kernel lock,
 * while there is none. Entered with the lock held. */
void cpu_idle(void) __attribute__((noreturn));
#endif

#endif /* SIGVISOR_GUEST_KIT_KERNEL_TASK_H_ */
