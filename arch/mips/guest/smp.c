/*
 * The other cores. Only core 0 runs the kernel; the others wait for IPIs from the
 * IPI device (docs/mips-platform.md) and do one thing when they get one: invalidate
 * the I-cache line core 0 asked for, then acknowledge. That is what a signal
 * trampoline written to the stack costs on SMP (seed 004, tramp=stack): Linux's
 * flush_cache_sigtramp() runs on every CPU through an IPI.
 */
#include "asm/smp.h"

#include "asm/cpu.h"
#include "asm/mipsregs.h"
#include "asm/page.h"
#include "asm/paging.h"
#include "guest-kit/kernel/task.h"

#define IPI_DEVICE 0x1f200000u
#define IPI_SEND 0x0
#define IPI_ACK 0x4
#define IPI_PENDING 0x8
#define ICACHE_LINE 32

static volatile uint32_t *ipi_register(uint32_t offset) {
  return (volatile uint32_t *)KSEG1ADDR(IPI_DEVICE + offset);
}

/* The line the next IPI asks the other cores to invalidate (a kseg0 address). */
static volatile uintptr_t flush_request;

void __attribute__((noreturn)) mips_secondary_main(unsigned core) {
  (void)core;
  write_c0_status(ST0_CU0 | ST0_IM2 | ST0_IE);
  for (;;) __asm__ volatile("wait");
}

void mips_ipi_interrupt(void) {
  const unsigned core = smp_processor_id();
  __asm__ volatile("cache 0x10, 0(%0)" : : "r"(flush_request) : "memory"); /* Hit_Invalidate_I */
  *ipi_register(IPI_ACK) = 1u << core;
}

void flush_cache_sigtramp(uintptr_t user_address) {
  /* This core: write the D-cache line back and invalidate the I-cache line. */
  __asm__ volatile("synci 0(%0)\n\tsync" : : "r"(user_address) : "memory");
  if (mips_num_cores < 2) return;
  /* Every other core, by IPI, waiting for each one's acknowledgement. They have no
   * mapping of this process: they invalidate by the kseg0 alias of the line. */
  uintptr_t line = paging_user_to_phys(current->page_table, user_address, 0);
  flush_request = line & ~(uintptr_t)(ICACHE_LINE - 1);
  __asm__ volatile("sync" : : : "memory");
  const uint32_t all = mips_num_cores >= 32 ? ~0u : (1u << mips_num_cores) - 1;
  const uint32_t others = all & ~1u;
  *ipi_register(IPI_SEND) = others;
  while (*ipi_register(IPI_PENDING) & others) {
  }
}
