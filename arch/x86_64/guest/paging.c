/*
 * The VMM's boot page tables identity-map guest RAM in the first GiB (PML4[0] ->
 * PDPT[0], supervisor-only). Every address space gets its own root and PDPT; the
 * kernel's PDPT[0] entry (the identity map) is shared, and user programs live in
 * PDPT[1] (USER_BASE..USER_TOP). Walks are written out level by level: they run
 * emulated on a PVM host, where each instruction costs about a microsecond.
 */
#include "arch/x86_64/guest/paging.h"

#include "arch/x86_64/guest/x86.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/page_alloc.h"

#define TABLE_FLAGS (PTE_PRESENT | PTE_WRITABLE | PTE_USER)
#if CONFIG_SMP
#define XAPIC_PDPT_INDEX (SIGVISOR_XAPIC_GPA >> 30)
#define PTE_PWT (1ull << 3)
#define PTE_PCD (1ull << 4)
#define PTE_LARGE (1ull << 7)
#endif

static uint64_t *table_at(uint64_t entry) { return (uint64_t *)(entry & PTE_ADDR_MASK); }

static uint64_t index_of(uint64_t va, int level) { return (va >> (12 + 9 * level)) & 511; }

uint64_t paging_new_address_space(void) {
  uint64_t *boot_root = table_at(read_cr3());
  uint64_t *boot_pdpt = table_at(boot_root[0]);
  uint64_t root = alloc_page();
  uint64_t pdpt = alloc_page();
  ((uint64_t *)pdpt)[0] = boot_pdpt[0];
#if CONFIG_SMP
  /* The fourth GiB: the xAPIC page where the machine sends IPIs that way (else 0). */
  ((uint64_t *)pdpt)[XAPIC_PDPT_INDEX] = boot_pdpt[XAPIC_PDPT_INDEX];
#endif
  ((uint64_t *)root)[0] = pdpt | TABLE_FLAGS;
  return root;
}

/* The next-level table under `table[index]`, allocated if absent. */
static uint64_t *next_table(uint64_t *table, uint64_t index) {
  if (!(table[index] & PTE_PRESENT)) table[index] = alloc_page() | TABLE_FLAGS;
  return table_at(table[index]);
}

/* paging_map_user where a table on the way is missing (a program's first page). */
static __attribute__((noinline)) void map_user_allocating(uint64_t root, uint64_t va, uint64_t pa,
                                                          uint64_t flags) {
  uint64_t *pdpt = next_table((uint64_t *)root, index_of(va, 3));
  uint64_t *pd = next_table(pdpt, index_of(va, 2));
  uint64_t *pt = next_table(pd, index_of(va, 1));
  pt[index_of(va, 0)] = (pa & PTE_ADDR_MASK) | flags;
}

/* Boot time: while every table is present, as for all but a program's first page,
 * the walk calls nothing (the allocating walk is a tail call) and so saves no
 * registers: 27 CPL0 instructions a page instead of 47, each about a microsecond
 * where CPL0 is emulated. */
void paging_map_user(uint64_t root, uint64_t va, uint64_t pa, uint64_t flags) {
  const uint64_t pml4e = ((uint64_t *)root)[index_of(va, 3)];
  if (!(pml4e & PTE_PRESENT)) return map_user_allocating(root, va, pa, flags);
  const uint64_t pdpte = table_at(pml4e)[index_of(va, 2)];
  if (!(pdpte & PTE_PRESENT)) return map_user_allocating(root, va, pa, flags);
  const uint64_t pde = table_at(pdpte)[index_of(va, 1)];
  if (!(pde & PTE_PRESENT)) return map_user_allocating(root, va, pa, flags);
  table_at(pde)[index_of(va, 0)] = (pa & PTE_ADDR_MASK) | flags;
}

uint64_t paging_user_to_phys(uint64_t root, uint64_t va, int write) {
  uint64_t want = PTE_PRESENT | PTE_USER | (write ? PTE_WRITABLE : 0);
  uint64_t *table = (uint64_t *)root;
  for (int level = 3; level >= 0; level--) {
    uint64_t entry = table[index_of(va, level)];
    if ((entry & want) != want) return 0;
    if (level == 0) return (entry & PTE_ADDR_MASK) | (va & 0xfff);
    if (entry & (1ull << 7)) return 0; /* large pages are kernel-only here */
    table = table_at(entry);
  }
  return 0;
}

int paging_repair_evicted(uint64_t root, uint64_t va) {
  uint64_t *table = (uint64_t *)root;
  for (int level = 3; level > 0; level--) {
    uint64_t entry = table[index_of(va, level)];
    if (!(entry & PTE_PRESENT) || (entry & (1ull << 7))) return 0;
    table = table_at(entry);
  }
  uint64_t *leaf = &table[index_of(va, 0)];
  if ((*leaf & PTE_PRESENT) || !(*leaf & SIGVISOR_PTE_EVICTED) || !(*leaf & PTE_USER)) return 0;
  *leaf = (*leaf & ~SIGVISOR_PTE_EVICTED) | PTE_PRESENT;
  invlpg(va);
  return 1;
}

#if CONFIG_SMP
/* smp=on with xAPIC IPIs: the local APIC's page at its own address, supervisor-only,
 * uncached (PCD, PWT), in the boot page tables' fourth GiB, which every address space
 * made after this shares. One 2 MiB page: SIGVISOR_XAPIC_GPA is 2 MiB-aligned, and no
 * other address of that range is ever touched. Before the first address space. */
void paging_map_xapic(void) {
  uint64_t *boot_pdpt = table_at(table_at(read_cr3())[0]);
  uint64_t *pd = next_table(boot_pdpt, XAPIC_PDPT_INDEX);
  pd[index_of(SIGVISOR_XAPIC_GPA, 1)] =
      SIGVISOR_XAPIC_GPA | PTE_PRESENT | PTE_WRITABLE | PTE_PWT | PTE_PCD | PTE_LARGE | PAGE_NX;
}
#endif
