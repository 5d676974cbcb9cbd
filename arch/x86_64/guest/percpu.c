#include "arch/x86_64/guest/percpu.h"

#include "arch/x86_64/guest/debugreg.h"

#if CONFIG_SMP
struct cpu_data cpu_data[SIGVISOR_MAX_CPUS];
#else
struct cpu_data boot_cpu_data;
#endif

#define MSR_GS_BASE 0xc0000101u
#define MSR_KERNEL_GS_BASE 0xc0000102u

static inline void wrmsr(uint32_t msr, uint64_t value) {
  __asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)value), "d"((uint32_t)(value >> 32)));
}

/* A segment-base write. It stays a native wrmsr in every build: its effect must be
 * immediate, and where nothing patches it KVM completes it without an exit. The pv
 * build (CONFIG_DEBUGREG_PV) also counts it in the VMM's page, from this caller. */
static inline void wrmsr_segment_base(uint32_t msr, uint64_t value) {
#if CONFIG_DEBUGREG_PV
  pv_count_segment_base_write(msr);
#endif
  wrmsr(msr, value);
}

void percpu_init(void) {
#if CONFIG_DEBUGREG_PV
  /* Before the first counted write. The boot info is also at its ABI address. */
  pv_debugreg_init((const struct sigvisor_boot_info *)(uintptr_t)SIGVISOR_BOOT_INFO_GPA);
#endif
#if CONFIG_SMP
  boot_cpu_data.self = &boot_cpu_data; /* cpu 0 */
#endif
#if !CONFIG_PDA_DIRECT
  /* In the kernel GS points at the per-CPU area; user mode runs with GS base 0,
   * which entry.S's swapgs exchanges through KERNEL_GS_BASE. */
  wrmsr_segment_base(MSR_GS_BASE, (uint64_t)&boot_cpu_data);
  wrmsr_segment_base(MSR_KERNEL_GS_BASE, 0);
#endif
}

#if CONFIG_SMP
void percpu_init_ap(int cpu) {
  struct cpu_data *data = &cpu_data[cpu];
  data->self = data;
  data->cpu = (uint64_t)cpu;
  wrmsr_segment_base(MSR_GS_BASE, (uint64_t)data);
  wrmsr_segment_base(MSR_KERNEL_GS_BASE, 0);
}
#endif
