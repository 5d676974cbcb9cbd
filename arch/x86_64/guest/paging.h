/* x86-64 four-level page tables for user address spaces. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_PAGING_H_
#define SIGVISOR_ARCH_X86_64_GUEST_PAGING_H_

#include <stdint.h>

#define PTE_PRESENT (1ull << 0)
#define PTE_WRITABLE (1ull << 1)
#define PTE_USER (1ull << 2)
#define PAGE_NX (1ull << 63)
#define PTE_ADDR_MASK 0x000ffffffffff000ull

#define PAGE_USER_RO (PTE_PRESENT | PTE_USER | PAGE_NX)
#define PAGE_USER_RW (PTE_PRESENT | PTE_USER | PTE_WRITABLE | PAGE_NX)

/* A new address space: the kernel's identity map (supervisor-only, shared) and an
 * empty user half. Returns the physical address of its root table. */
uint64_t paging_new_address_space(void);

/* Maps the user page at `va` to the physical page `pa` with leaf `flags`. */
void paging_map_user(uint64_t root, uint64_t va, uint64_t pa, uint64_t flags);

/* The physical address behind user address `va` if it is mapped user-accessible
 * (and writable, when `write` is set); 0 otherwise. */
uint64_t paging_user_to_phys(uint64_t root, uint64_t va, int write);

/* Demand paging of a page the host evicted (SIGVISOR_PTE_EVICTED, fault injection):
 * if the user page at `va` is not present and marked evicted, maps it back and
 * returns 1; otherwise 0 (a real fault). */
int paging_repair_evicted(uint64_t root, uint64_t va);

/* smp=on, xAPIC IPIs: maps the local APIC's page (apic.c). */
void paging_map_xapic(void);

#endif /* SIGVISOR_ARCH_X86_64_GUEST_PAGING_H_ */
