/* Debug-register moves. Each `mov %reg, %dbN` here is a site the VMM's trap engine
 * finds and counts (seed 000 is about the one on the signal path).
 *
 * The one place the kernel writes debug registers, and so the one place that reads
 * CONFIG_DEBUGREG_PV: with it, every write goes to the VMM's paravirtual page
 * instead (pv_debugreg.c; --trap=pv), which falls back to these same moves when the
 * VMM supplied no page. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_DEBUGREG_H_
#define SIGVISOR_ARCH_X86_64_GUEST_DEBUGREG_H_

#include <stdint.h>

#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"

#if CONFIG_DEBUGREG_PV
/* pv_debugreg.c. Not inlined: the VMM reports each write at the caller's address
 * (this call's return address). */
void pv_set_debugreg(int index, uint64_t value);
/* Takes the VMM's page from the boot info (none: native moves from then on). */
void pv_debugreg_init(const struct sigvisor_boot_info *boot);
/* Counts a wrmsr to FS_BASE, GS_BASE or KERNEL_GS_BASE made from the caller. */
void pv_count_segment_base_write(uint32_t msr);
#endif

/* The native moves: every build's without CONFIG_DEBUGREG_PV, and the pv build's when
 * the VMM supplied no page. Other indexes are ignored. */
static inline void native_set_debugreg(int index, uint64_t value) {
  switch (index) {
    case 0: __asm__ volatile("mov %0, %%db0" : : "r"(value)); break;
    case 1: __asm__ volatile("mov %0, %%db1" : : "r"(value)); break;
    case 2: __asm__ volatile("mov %0, %%db2" : : "r"(value)); break;
    case 3: __asm__ volatile("mov %0, %%db3" : : "r"(value)); break;
    case 6: __asm__ volatile("mov %0, %%db6" : : "r"(value)); break;
    case 7: __asm__ volatile("mov %0, %%db7" : : "r"(value)); break;
    default: break;
  }
}

static inline void set_debugreg7(uint64_t value) {
#if CONFIG_DEBUGREG_PV
  pv_set_debugreg(7, value);
#else
  __asm__ volatile("mov %0, %%db7" : : "r"(value));
#endif
}

/* Loads one debug register (0-3, 6, 7); other indexes are ignored. */
static inline void set_debugreg(int index, uint64_t value) {
#if CONFIG_DEBUGREG_PV
  pv_set_debugreg(index, value);
#else
  native_set_debugreg(index, value);
#endif
}

#endif /* SIGVISOR_ARCH_X86_64_GUEST_DEBUGREG_H_ */
