/*
 * Bringing up the application processors (smp=on, CONFIG_SMP; sigvisor_abi.h, "SMP").
 *
 * After the quiescent point (kernel_main: the orders call has returned, no user task
 * exists yet), so that boot and the orders call are the same as on one CPU and a VM
 * saved there holds one running vCPU. For each CPU 1..cpus-1 the boot CPU makes
 * SIGVISOR_HC_CPU_UP: the VMM starts it in the caller's paging and descriptor state at
 * x86_ap_entry (entry.S) with rsp = the top of its idle stack and rdi = its number.
 * The AP loads its own GDT copy and TSS, the shared IDT, its GS base, enables its
 * local APIC, says it is online and enters its idle loop, which runs a task pinned to
 * it once one becomes runnable. The boot CPU waits until every AP is online (a flag
 * per CPU), then takes the big kernel lock and starts init.
 */
#include "asm/smp.h"

#include "guest-kit/kernel/config.h"

#if CONFIG_SMP

#include "arch/x86_64/guest/apic.h"
#include "arch/x86_64/guest/cpu.h"
#include "arch/x86_64/guest/percpu.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/smp.h"
#include "guest-kit/kernel/task.h"

void x86_ap_entry(void);
void x86_ap_start(uint64_t cpu) __attribute__((noreturn));

void x86_ap_start(uint64_t cpu) {
  const int n = (int)cpu;
  cpu_init_ap(n);
  percpu_init_ap(n);
  apic_init_cpu();
  this_cpu_write(current_task, cpu_data[n].idle_task);
  __atomic_store_n(&cpu_data[n].online, 1, __ATOMIC_RELEASE);
  lock_kernel();
  cpu_idle();
}

void smp_boot_cpus(const struct sigvisor_boot_info *boot) {
  /* 0 from a VMM that predates the field (and under QEMU, whose boot info this kernel
   * makes itself) means one. */
  const uint32_t cpus = boot->cpus ? boot->cpus : 1;
  if (cpus > SIGVISOR_MAX_CPUS)
    panic("%u CPUs: this kernel runs on %u at most", cpus, SIGVISOR_MAX_CPUS);
  idle_task_init(0);
  if (cpus > 1) {
    apic_init_boot(boot);
    apic_init_cpu();
    smp_num_cpus = (int)cpus; /* before any AP's idle loop looks at the run queues */
    for (uint32_t cpu = 1; cpu < cpus; cpu++) {
      idle_task_init((int)cpu);
      hc_cpu_up(cpu, (uint64_t)x86_ap_entry, cpu_data[cpu].idle_task->kernel_stack_top, cpu);
    }
    for (uint32_t cpu = 1; cpu < cpus; cpu++)
      while (!__atomic_load_n(&cpu_data[cpu].online, __ATOMIC_ACQUIRE)) cpu_relax();
  }
  lock_kernel();
}

#endif /* CONFIG_SMP */
