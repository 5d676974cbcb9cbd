/*
 * User address spaces: a software page table walked by the TLB refill handler
 * (entry.S). Two levels, Linux style: a page directory of 1024 pointers (kseg0) to
 * page tables of 1024 PTEs, each PTE being the EntryLo value itself, so the refill
 * handler loads an even/odd pair straight into EntryLo0/1. Unused directory slots
 * point at one shared all-zero table, so the refill needs no test: a zero PTE is
 * "not valid" and the access takes a TLB invalid exception.
 *
 * A task's `page_table` is its directory's kseg0 address ORed with its ASID (the
 * directory is page-aligned, the ASID is 8 bits).
 */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_PAGING_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_PAGING_H_

#include <stdint.h>

#include "asm/mipsregs.h"

#define PAGE_USER_RO (ENTRYLO_V | ENTRYLO_CACHED)
#define PAGE_USER_RW (ENTRYLO_V | ENTRYLO_D | ENTRYLO_CACHED)
#define PAGE_NX 0 /* MIPS32r2 without RI/XI: every readable page is executable */

uintptr_t paging_new_address_space(void);
/* `pa` is a kernel (kseg0) address of the page. */
void paging_map_user(uintptr_t root, uint64_t va, uintptr_t pa, uint64_t flags);
/* The kseg0 address behind user address `va` if mapped (and writable, when
 * `write`), else 0. (On x86-64 the physical address, which is the same thing
 * there: both are what the kernel dereferences and hands to hc_console_write.) */
uintptr_t paging_user_to_phys(uintptr_t root, uint64_t va, int write);

/* The directory the refill handler walks: the current task's. */
extern uint32_t *current_pgd;

static inline void switch_mm(uintptr_t page_table) {
  current_pgd = (uint32_t *)(page_table & ~0xfffu);
  write_c0_entryhi(page_table & 0xff); /* the ASID; VPN2 is the refill's to set */
}

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_PAGING_H_ */
