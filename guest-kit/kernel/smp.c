/*
 * Several CPUs (smp=on, CONFIG_SMP): the big kernel lock and the IPI rule (smp.h).
 * The arch brings the CPUs up and sends the IPIs (asm/smp.h).
 */
#include "guest-kit/kernel/smp.h"

#include "guest-kit/kernel/task.h"

#if CONFIG_SMP

int smp_num_cpus = 1;
volatile int kernel_flag;
static struct sigvisor_ipi_counts ipi_counts;

/* Every reschedule IPI the rule sends goes through here, and is counted: by the
 * sender, for itself and for its target, with the kernel lock held (so one CPU at a
 * time writes the counts). Counted at the send, not in the target's handler: the
 * handler may run before its CPU's per-CPU data is at hand, and the rule, not the
 * handler, is what is measured. */
static void send_reschedule(int cpu) {
  uint64_t *sent = &ipi_counts.sent[smp_processor_id()];
  uint64_t *received = &ipi_counts.received[cpu];
  __atomic_store_n(sent, *sent + 1, __ATOMIC_RELAXED);
  __atomic_store_n(received, *received + 1, __ATOMIC_RELAXED);
  arch_send_reschedule(cpu);
}

void smp_read_ipi_counts(struct sigvisor_ipi_counts *out) {
  for (int cpu = 0; cpu < (int)SIGVISOR_MAX_CPUS; cpu++) {
    out->sent[cpu] = __atomic_load_n(&ipi_counts.sent[cpu], __ATOMIC_RELAXED);
    out->received[cpu] = __atomic_load_n(&ipi_counts.received[cpu], __ATOMIC_RELAXED);
  }
}

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
  send_reschedule(cpu);
}

void kick_process(struct task *task) {
  const int self = smp_processor_id();
  for (int cpu = 0; cpu < smp_num_cpus; cpu++) {
    if (cpu != self && cpu_data[cpu].current_task == task) {
      send_reschedule(cpu);
      return;
    }
  }
}

#endif /* CONFIG_SMP */
