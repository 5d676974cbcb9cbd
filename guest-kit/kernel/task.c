#include "guest-kit/kernel/task.h"

#include "guest-kit/kernel/hypercall.h"

struct task *current;

void task_exit(int status) {
  /* init is the only task for now: its status is the guest's. */
  hc_exit(status);
}
