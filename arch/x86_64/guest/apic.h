/*
 * The local APIC and inter-processor interrupts of an smp=on kernel (CONFIG_SMP):
 * how this machine wants IPIs sent (sigvisor_boot_info.ipi) is chosen once at boot,
 * as Linux picks its apic driver, and apic.c is the one place that reads it.
 */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_APIC_H_
#define SIGVISOR_ARCH_X86_64_GUEST_APIC_H_

/* The vector of the reschedule IPI (a wake-up or a kick), Linux's RESCHEDULE_VECTOR:
 * a DPL0 interrupt gate (user code cannot `int` it). */
#define RESCHEDULE_VECTOR 0xfd
/* The spurious-interrupt vector the APICs are enabled with (SVR): a gate that only
 * returns (a spurious interrupt takes no EOI). */
#define SPURIOUS_APIC_VECTOR 0xff

#ifndef __ASSEMBLER__
#include <stdint.h>

#include "guest-kit/abi/sigvisor_abi.h"

/* Boot CPU, once: takes the way IPIs are sent from `boot` (SIGVISOR_IPI_*), maps the
 * xAPIC page where that is the way. */
void apic_init_boot(const struct sigvisor_boot_info *boot);
/* Every CPU, itself: enables its local APIC (x2APIC mode for x2apic and pv). */
void apic_init_cpu(void);
/* Ends the interrupt being handled. */
void apic_eoi(void);
/* Sends RESCHEDULE_VECTOR to `cpu` (its APIC ID is its number). */
void apic_send_reschedule(int cpu);
#endif

#endif /* SIGVISOR_ARCH_X86_64_GUEST_APIC_H_ */
