/*
 * Per-CPU data (Linux's PDA). Seed 001 lives here: with CONFIG_PDA_DIRECT=0 every
 * access goes through a %gs-prefixed load, and entry.S swaps the GS base on every
 * kernel entry from user mode and back on exit (two segment-base loads per
 * syscall); with 1, this uniprocessor kernel reads a plain global and leaves %gs
 * alone. An smp=on kernel (CONFIG_SMP) has one structure per CPU, always through %gs.
 */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_PERCPU_H_
#define SIGVISOR_ARCH_X86_64_GUEST_PERCPU_H_

#include <stddef.h>
#include <stdint.h>

#include "guest-kit/kernel/config.h"

struct task;

#if CONFIG_SMP
#include "guest-kit/abi/sigvisor_abi.h"

/* smp=on: one per CPU, each CPU's GS base at its own (so always through %gs). Every
 * field is 8 bytes: this_cpu_read() is one movq. Another CPU's is cpu_data[n]. */
struct cpu_data {
  struct task *current_task; /* what this CPU runs: a task, or its idle task */
  struct cpu_data *self;     /* this_cpu(): the structure's own address */
  struct task *idle_task;    /* runs the idle loop when no task of this CPU can run */
  void *tss;                 /* this CPU's TSS (cpu.c: cpu_set_kernel_stack) */
  uint64_t cpu;              /* this CPU's number, which is its APIC ID */
  volatile uint64_t idle;    /* halted in the idle loop: a wake-up needs an IPI */
  volatile uint64_t online;  /* the AP is up (the boot CPU waits for it) */
};

extern struct cpu_data cpu_data[SIGVISOR_MAX_CPUS];
#define boot_cpu_data (cpu_data[0])
#else
struct cpu_data {
  struct task *current_task;
};

extern struct cpu_data boot_cpu_data;
#endif

#if CONFIG_PDA_DIRECT
#define this_cpu_read(field) (boot_cpu_data.field)
#define this_cpu_write(field, value) (boot_cpu_data.field = (value))
#else
#define this_cpu_read(field)                                           \
  ({                                                                   \
    __typeof__(boot_cpu_data.field) __value;                           \
    __asm__ volatile("movq %%gs:%c1, %0"                               \
                     : "=r"(__value)                                   \
                     : "i"(offsetof(struct cpu_data, field)));         \
    __value;                                                           \
  })
#define this_cpu_write(field, value)                                   \
  __asm__ volatile("movq %0, %%gs:%c1"                                 \
                   :                                                   \
                   : "r"((__typeof__(boot_cpu_data.field))(value)),    \
                     "i"(offsetof(struct cpu_data, field))             \
                   : "memory")
#endif

/* Makes the per-CPU area reachable (the GS base, where it is used). */
void percpu_init(void);

#if CONFIG_SMP
#define this_cpu() (this_cpu_read(self))
#define smp_processor_id() ((int)this_cpu_read(cpu))
/* An AP's own: its GS base at cpu_data[cpu]. */
void percpu_init_ap(int cpu);
#endif

#endif /* SIGVISOR_ARCH_X86_64_GUEST_PERCPU_H_ */
