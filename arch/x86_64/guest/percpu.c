#include "arch/x86_64/guest/percpu.h"

struct cpu_data boot_cpu_data;

#define MSR_GS_BASE 0xc0000101u
#define MSR_KERNEL_GS_BASE 0xc0000102u

static inline void wrmsr(uint32_t msr, uint64_t value) {
  __asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)value), "d"((uint32_t)(value >> 32)));
}

void percpu_init(void) {
#if !CONFIG_PDA_DIRECT
  /* In the kernel GS points at the per-CPU area; user mode runs with GS base 0,
   * which entry.S's swapgs exchanges through KERNEL_GS_BASE. */
  wrmsr(MSR_GS_BASE, (uint64_t)&boot_cpu_data);
  wrmsr(MSR_KERNEL_GS_BASE, 0);
#endif
}
