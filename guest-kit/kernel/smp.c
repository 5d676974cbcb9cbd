/*
 * Several CPUs (smp=on, CONFIG_SMP): the big kernel lock and the IPI rule (smp.h).
 * The arch brings the CPUs up and sends the IPIs (asm/smp.h).
 */
#include "guest-kit/kernel/smp.h"

#include "guest-kit/kernel/task.h"

#if CONFIG_SMP

int smp_num_cpus = 1;
volatile int kernel_flag;

int task_running_elsewhere(const struct task *task, int cpu) {
  for (int other = 0; other < smp_num_cpus; other++)
    if (other != cpu && cpu_data[other].current_task == task) return 1;
  return 0;
}

void smp_wake_up_notify(struct task *task) {
  const int cpu = task->cpu;
  if (cpu == smp_processor_id() || !cpu_data[cpu].idle) return;
  /* One IPI per wake-up: a second wake-up before that CPU takes the lock sends none. */
  cpu_data[cpu].idle = 0;
  arch_send_reschedule(cpu);
}

void kick_process(struct task *task) {
  const int self = smp_processor_id();
  for (int cpu = 0; cpu < smp_num_cpus; cpu++) {
    if (cpu != self && cpu_data[cpu].current_task == task) {
      arch_send_reschedule(cpu);
      return;
    }
  }
}

#endif /* CONFIG_SMP */
