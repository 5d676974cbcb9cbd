/* Tasks: a user address space, a kernel stack and an exit status. */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_TASK_H_
#define SIGVISOR_GUEST_KIT_KERNEL_TASK_H_

#include <stdint.h>

#define TASK_NAME_MAX 16

struct task {
  int pid;
  char name[TASK_NAME_MAX];
  uint64_t page_table; /* root of this task's address space (physical) */
  uint64_t kernel_stack_top;
};

extern struct task *current;

/* The current task ends with `status` (already encoded: 0-255, or 128 + signal for
 * a task killed by a signal). Ending init ends the guest. */
void task_exit(int status) __attribute__((noreturn));

#endif /* SIGVISOR_GUEST_KIT_KERNEL_TASK_H_ */
