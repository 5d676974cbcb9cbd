/* Per-CPU data: only core 0 runs the kernel proper (the others serve IPIs), so the
 * running task is a plain global. (Seed 001's %gs question does not arise here.) */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_PERCPU_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_PERCPU_H_

struct task;

struct cpu_data {
  struct task *current_task;
};

extern struct cpu_data boot_cpu_data;

#define this_cpu_read(field) (boot_cpu_data.field)
#define this_cpu_write(field, value) (boot_cpu_data.field = (value))

static inline void percpu_init(void) {}

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_PERCPU_H_ */
