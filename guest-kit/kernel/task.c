/*
 * Tasks and the scheduler. Scheduling is cooperative: a task runs until it blocks,
 * yields or exits (there is no timer interrupt; the workloads synchronise through
 * signals and pipes). Processes are created by spawning the built-in program with a
 * new argument string rather than by fork: fork's page copying costs about 0.5 us
 * per byte where CPL0 is emulated.
 */
#include "guest-kit/kernel/task.h"

#include "asm/cpu.h"
#include "asm/paging.h"
#include "asm/switch_to.h"
#include "guest-kit/kernel/exec.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/signal.h"
#include "guest-kit/lib/string.h"
#include "guest-kit/uapi/syscalls.h"

#if CONFIG_SMP
#include "guest-kit/kernel/smp.h"
#endif

#ifndef ARCH_SKIP_CLEARING_FRESH_BSS
#define ARCH_SKIP_CLEARING_FRESH_BSS 0
#endif

static struct task tasks[MAX_TASKS];
static uint8_t kernel_stacks[MAX_TASKS][KERNEL_STACK_SIZE] __attribute__((aligned(16)));
static int next_pid = 1;

/* The built-in program, embedded page-aligned by the build (guest-kit/BUILD.bazel). */
extern const uint8_t user_program_init_start[];
extern const uint8_t user_program_init_end[];

static struct task *alloc_task(void) {
  for (int i = 0; i < MAX_TASKS; i++) {
    struct task *task = &tasks[i];
    if (task->state != TASK_UNUSED) continue;
    /* Boot time: a slot never used before (pid 0: pids start at 1) is still as the
     * VMM's loader left .bss, zero. Clearing init's ~3 KiB slot took ~1.5 ms on x86
     * where CPL0 is emulated, half of boot (asm/cpu.h). MIPS clears it anyway: its
     * exact counts depend on how many instructions ran before a phase (skipping
     * this moved a TLB refill into sigpingpong's markers, 4216 -> 4210 per op). */
    if (!ARCH_SKIP_CLEARING_FRESH_BSS || task->pid != 0) memset(task, 0, sizeof(*task));
    task->pid = next_pid++;
    task->kernel_stack_top = (uintptr_t)(kernel_stacks[i] + KERNEL_STACK_SIZE);
    return task;
  }
  return 0;
}

/* Maps the built-in program into a fresh address space of `task` with `args`. */
static int load_program(struct task *task, const char *args) {
  task->page_table = paging_new_address_space();
  memcpy(task->name, "init", 5);
  return exec_program(task, user_program_init_start,
                      (size_t)(user_program_init_end - user_program_init_start), args,
                      task_pt_regs(task));
}

void task_start_init(const char *args) {
  struct task *init = alloc_task();
  int err = load_program(init, args);
  if (err) panic("cannot start init: error %d", err);
  files_init_console(init->files);
  init->state = TASK_RUNNABLE;
  this_cpu_write(current_task, init);
  cpu_set_kernel_stack(init->kernel_stack_top);
  switch_mm(init->page_table);
  enter_user_mode(task_pt_regs(init));
}

int task_spawn(const char *args) {
  struct task *parent = current;
  struct task *child = alloc_task();
  if (!child) return -EAGAIN;
  int err = load_program(child, args);
  if (err) return err;
  child->parent_pid = parent->pid;
  files_share(child->files, parent->files);
  child->signal.blocked = parent->signal.blocked; /* handlers start at SIG_DFL */
  copy_thread(child); /* its first switch-in returns to user mode through its pt_regs */
  child->state = TASK_RUNNABLE;
#if CONFIG_SMP
  child->cpu = parent->cpu;
  smp_wake_up_notify(child);
#endif
  return child->pid;
}

struct task *task_find(int pid) {
  for (int i = 0; i < MAX_TASKS; i++)
    if (tasks[i].state != TASK_UNUSED && tasks[i].state != TASK_ZOMBIE && tasks[i].pid == pid)
      return &tasks[i];
  return 0;
}

#if CONFIG_SMP
/*
 * smp=on (docs/guest-kernel.md, "Several CPUs"). Every task runs on one CPU (its
 * `cpu`); each CPU has an idle task, outside tasks[], with its own stack. schedule()
 * takes the next RUNNABLE task of this CPU that is not running on another (round
 * robin), or the idle task when there is none. The big kernel lock is held
 * throughout, across switch_to too: it is the CPU's, not the task's.
 */
static struct task idle_tasks[SIGVISOR_MAX_CPUS];
#define IDLE_STACK_SIZE (2 * 4096)
static uint8_t idle_stacks[SIGVISOR_MAX_CPUS][IDLE_STACK_SIZE] __attribute__((aligned(16)));

void idle_task_init(int cpu) {
  struct task *idle = &idle_tasks[cpu];
  idle->state = TASK_RUNNABLE;
  idle->cpu = cpu;
  memcpy(idle->name, "idle", 5);
  idle->kernel_stack_top = (uintptr_t)(idle_stacks[cpu] + IDLE_STACK_SIZE);
  cpu_data[cpu].idle_task = idle;
  /* CPU 0 first runs it when switched to; an AP starts on its stack (smp.c). */
  if (cpu == 0) copy_idle_thread(idle);
}

void schedule(void) {
  struct task *prev = current;
  const int cpu = smp_processor_id();
  struct task *idle = this_cpu_read(idle_task);
  /* A task that moved itself to another CPU (sched_setaffinity) is that CPU's now. */
  if (prev != idle && prev->state == TASK_RUNNABLE && prev->cpu != cpu) smp_wake_up_notify(prev);
  const int start = prev == idle ? MAX_TASKS - 1 : (int)(prev - tasks);
  struct task *next = 0;
  for (int step = 1; step <= MAX_TASKS; step++) {
    struct task *candidate = &tasks[(start + step) % MAX_TASKS];
    if (candidate->state == TASK_RUNNABLE && candidate->cpu == cpu &&
        (candidate == prev || !task_running_elsewhere(candidate, cpu))) {
      next = candidate;
      break;
    }
  }
  if (!next) {
    /* On one CPU nothing can make a task runnable again: the UP build's verdict. */
    if (smp_num_cpus == 1 && prev != idle)
      panic("deadlock: no task can run (pid %d is the last one blocked)", prev->pid);
    next = idle;
  }
  if (next == prev) return;
  this_cpu_write(current_task, next);
  if (next != idle) { /* the idle task stays in the kernel, in whatever address space */
    cpu_set_kernel_stack(next->kernel_stack_top);
    switch_mm(next->page_table);
  }
  switch_to(prev, next);
}

void cpu_idle(void) {
  struct cpu_data *self = this_cpu();
  for (;;) {
    schedule(); /* returns when no task of this CPU can run */
    self->idle = 1;
    unlock_kernel();
    arch_idle_halt(); /* until an IPI: a wake-up (smp_wake_up_notify) */
    lock_kernel();
    self->idle = 0;
  }
}

int64_t sys_sched_setaffinity(int pid, int64_t cpu) {
  if (cpu < 0 || cpu >= smp_num_cpus) return -EINVAL;
  struct task *task = pid == 0 ? current : task_find(pid);
  if (!task) return -ESRCH;
  task->cpu = (int)cpu;
  if (task == current) {
    if (cpu != smp_processor_id()) schedule(); /* back here on `cpu` */
  } else if (task->state == TASK_RUNNABLE) {
    smp_wake_up_notify(task);
  }
  return 0;
}
#else
void schedule(void) {
  struct task *prev = current;
  int start = (int)(prev - tasks);
  struct task *next = 0;
  for (int step = 1; step <= MAX_TASKS; step++) {
    struct task *candidate = &tasks[(start + step) % MAX_TASKS];
    if (candidate->state == TASK_RUNNABLE) {
      next = candidate;
      break;
    }
  }
  if (!next) panic("deadlock: no task can run (pid %d is the last one blocked)", prev->pid);
  if (next == prev) return;
  this_cpu_write(current_task, next);
  cpu_set_kernel_stack(next->kernel_stack_top);
  switch_mm(next->page_table);
  switch_to(prev, next);
}
#endif

void sleep_on(const void *channel) {
  struct task *self = current;
  self->state = TASK_SLEEPING;
  self->wait_channel = channel;
  schedule();
  self->wait_channel = 0;
}

#if CONFIG_SMP
void wake_up(const void *channel) {
  for (int i = 0; i < MAX_TASKS; i++) {
    if (tasks[i].state == TASK_SLEEPING && tasks[i].wait_channel == channel) {
      tasks[i].state = TASK_RUNNABLE;
      smp_wake_up_notify(&tasks[i]);
    }
  }
}

void signal_wake_up(struct task *task) {
  if (task->state == TASK_SLEEPING) {
    task->state = TASK_RUNNABLE;
    smp_wake_up_notify(task);
    return;
  }
  kick_process(task);
}
#else
void wake_up(const void *channel) {
  for (int i = 0; i < MAX_TASKS; i++)
    if (tasks[i].state == TASK_SLEEPING && tasks[i].wait_channel == channel)
      tasks[i].state = TASK_RUNNABLE;
}

void signal_wake_up(struct task *task) {
  if (task->state == TASK_SLEEPING) task->state = TASK_RUNNABLE;
}
#endif

/* The status init reports to the VMM: the exit code, or 128 + the signal that
 * killed it, as a shell shows it. */
static int64_t vmm_status(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

void task_exit(int status) {
  struct task *self = current;
  files_close_all(self->files);
  if (self->pid == 1) hc_exit(vmm_status(status));
  for (int i = 0; i < MAX_TASKS; i++)
    if (tasks[i].state != TASK_UNUSED && tasks[i].parent_pid == self->pid) tasks[i].parent_pid = 1;
  self->exit_code = status;
  self->state = TASK_ZOMBIE;
  struct task *parent = task_find(self->parent_pid);
  if (parent) {
    send_signal_from_kernel(parent, SIGCHLD, self->pid);
    wake_up(parent);
  }
  schedule();
  panic("a zombie ran again");
}

int task_wait(int pid, int *status) {
  struct task *self = current;
  for (;;) {
    int children = 0;
    for (int i = 0; i < MAX_TASKS; i++) {
      struct task *child = &tasks[i];
      if (child->state == TASK_UNUSED || child->parent_pid != self->pid) continue;
      if (pid > 0 && child->pid != pid) continue;
      children++;
      if (child->state != TASK_ZOMBIE) continue;
      *status = child->exit_code;
      child->state = TASK_UNUSED;
      return child->pid;
    }
    if (!children) return -ECHILD;
    if (signal_pending(self)) return -EINTR;
    sleep_on(self);
  }
}
