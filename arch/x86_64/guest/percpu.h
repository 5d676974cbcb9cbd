/*
 * Per-CPU data (Linux's PDA). Seed 001 lives here: with CONFIG_PDA_DIRECT=0 every
 * access goes through a %gs-prefixed load, and entry.S swaps the GS base on every
 * kernel entry from user mode and back on exit (two segment-base loads per
 * syscall); with 1, this uniprocessor kernel reads a plain global and leaves %gs
 * alone.
 */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_PERCPU_H_
#define SIGVISOR_ARCH_X86_64_GUEST_PERCPU_H_

#include <stddef.h>
#include <stdint.h>

#include "guest-kit/kernel/config.h"

struct task;

struct cpu_data {
  struct task *current_task;
};

extern struct cpu_data boot_cpu_data;

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

#endif /* SIGVISOR_ARCH_X86_64_GUEST_PERCPU_H_ */
