/* The x86-64 side of several CPUs (smp=on, CONFIG_SMP) for the arch-neutral kernel:
 * the CPU number, the reschedule IPI, halting in the idle loop, AP bring-up. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_ASM_SMP_H_
#define SIGVISOR_ARCH_X86_64_GUEST_ASM_SMP_H_

#include "arch/x86_64/guest/apic.h"
#include "arch/x86_64/guest/percpu.h"
#include "guest-kit/abi/sigvisor_abi.h"

/* smp_processor_id() and this_cpu(): percpu.h. */

static inline void cpu_relax(void) { __asm__ volatile("pause" : : : "memory"); }

static inline void arch_send_reschedule(int cpu) { apic_send_reschedule(cpu); }

/* The idle loop's halt (entry.S): `sti; hlt; cli`, interrupts on only there. An
 * interrupt already pending is taken once the halt has begun (sti's one-instruction
 * shadow), so no wake-up is lost between the last look at the run queue and the
 * halt; and where a host delivers one inside the shadow, before the `hlt`, the
 * handler resumes past the `hlt` (traps.c), as Linux/MIPS rolls back its wait. */
void x86_idle_halt(void);
extern const char x86_idle_hlt[]; /* the `hlt` itself */
static inline void arch_idle_halt(void) { x86_idle_halt(); }

/* smp.c: after the quiescent point, brings up the machine's other CPUs (boot info
 * `cpus`), each into its idle loop, and returns once every one is online. */
void smp_boot_cpus(const struct sigvisor_boot_info *boot);

#endif /* SIGVISOR_ARCH_X86_64_GUEST_ASM_SMP_H_ */
