/*
 * The local APIC (smp=on, CONFIG_SMP): enabling it, EOI, and the reschedule IPI, in
 * the three ways a sigvisor machine offers (sigvisor_abi.h, "SMP"):
 *
 *   x2apic  IA32_APIC_BASE |= EN|EXTD, SVR MSR 0x80f, EOI MSR 0x80b, ICR MSR 0x830
 *           (edx = destination APIC ID, eax = vector): an MSR write KVM's in-kernel
 *           APIC completes, no VMM exit;
 *   xapic   the APIC page at SIGVISOR_XAPIC_GPA mapped uncached (paging.c): SVR at
 *           +0xf0, EOI at +0xb0, ICR high +0x310 then low +0x300 (MMIO);
 *   pv      x2APIC mode for EOI and receiving; sending is SIGVISOR_HC_SEND_IPI with a
 *           mask of CPUs (KVM's PV send-IPI is the model): one port write, a VMM exit.
 *
 * Chosen once at boot from the boot info, as Linux picks its apic driver: `ipi_mode`
 * is read here and nowhere else.
 */
#include "arch/x86_64/guest/apic.h"

#include "guest-kit/kernel/config.h"

#if CONFIG_SMP

#include "arch/x86_64/guest/paging.h"
#include "guest-kit/kernel/hypercall.h"
#include "guest-kit/kernel/kernel.h"

#define MSR_IA32_APIC_BASE 0x1bu
#define APIC_BASE_EXTD (1u << 10) /* x2APIC mode */
#define APIC_BASE_EN (1u << 11)   /* the APIC is enabled */
#define MSR_X2APIC_EOI 0x80bu
#define MSR_X2APIC_SVR 0x80fu
#define MSR_X2APIC_ICR 0x830u
#define XAPIC_EOI 0xb0u
#define XAPIC_SVR 0xf0u
#define XAPIC_ICR_LOW 0x300u
#define XAPIC_ICR_HIGH 0x310u
#define SVR_APIC_ENABLED 0x100u

static uint32_t ipi_mode; /* SIGVISOR_IPI_* */

static inline void wrmsr(uint32_t msr, uint32_t low, uint32_t high) {
  __asm__ volatile("wrmsr" : : "c"(msr), "a"(low), "d"(high) : "memory");
}

static inline uint64_t rdmsr(uint32_t msr) {
  uint32_t low, high;
  __asm__ volatile("rdmsr" : "=a"(low), "=d"(high) : "c"(msr));
  return ((uint64_t)high << 32) | low;
}

/* The xAPIC page is mapped at its own address (paging_map_xapic). */
static inline void xapic_write(uint32_t offset, uint32_t value) {
  *(volatile uint32_t *)(uintptr_t)(SIGVISOR_XAPIC_GPA + offset) = value;
}

void apic_init_boot(const struct sigvisor_boot_info *boot) {
  ipi_mode = boot->ipi;
  if (ipi_mode != SIGVISOR_IPI_X2APIC && ipi_mode != SIGVISOR_IPI_XAPIC &&
      ipi_mode != SIGVISOR_IPI_PV)
    panic("%u CPUs but no way to send IPIs (boot info ipi %u)", boot->cpus, boot->ipi);
  if (ipi_mode == SIGVISOR_IPI_XAPIC) paging_map_xapic();
}

void apic_init_cpu(void) {
  if (ipi_mode == SIGVISOR_IPI_XAPIC) {
    xapic_write(XAPIC_SVR, SVR_APIC_ENABLED | SPURIOUS_APIC_VECTOR);
    return;
  }
  /* From xAPIC mode (the reset state, EN set) to x2APIC mode: set EXTD. */
  const uint64_t base = rdmsr(MSR_IA32_APIC_BASE) | APIC_BASE_EN | APIC_BASE_EXTD;
  wrmsr(MSR_IA32_APIC_BASE, (uint32_t)base, (uint32_t)(base >> 32));
  wrmsr(MSR_X2APIC_SVR, SVR_APIC_ENABLED | SPURIOUS_APIC_VECTOR, 0);
}

void apic_eoi(void) {
  if (ipi_mode == SIGVISOR_IPI_XAPIC) {
    xapic_write(XAPIC_EOI, 0);
    return;
  }
  wrmsr(MSR_X2APIC_EOI, 0, 0);
}

void apic_send_reschedule(int cpu) {
  switch (ipi_mode) {
    case SIGVISOR_IPI_X2APIC: wrmsr(MSR_X2APIC_ICR, RESCHEDULE_VECTOR, (uint32_t)cpu); break;
    case SIGVISOR_IPI_XAPIC:
      /* Fixed delivery, physical destination: the high half (destination) first, the
       * write to the low half sends. */
      xapic_write(XAPIC_ICR_HIGH, (uint32_t)cpu << 24);
      xapic_write(XAPIC_ICR_LOW, RESCHEDULE_VECTOR);
      break;
    case SIGVISOR_IPI_PV: hc_send_ipi(1ull << cpu, RESCHEDULE_VECTOR); break;
    default: panic("IPI to CPU %d with no way to send it", cpu);
  }
}

#endif /* CONFIG_SMP */
