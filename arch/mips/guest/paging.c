/* User address spaces: the software page table the TLB refill handler walks (see
 * asm/paging.h for the layout), and ASIDs. */
#include "asm/paging.h"

#include "asm/page.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/page_alloc.h"

#define PGD_ENTRIES 1024
#define PTE_ENTRIES 1024
#define MAX_ASID 255

/* The page table of every unused directory slot: all PTEs zero (not valid). */
static uint32_t invalid_pte_table[PTE_ENTRIES] __attribute__((aligned(4096)));
/* Set by switch_mm() before the first user access: nothing in kuseg is touched
 * before the first task's address space is current. */
uint32_t *current_pgd;
static unsigned next_asid = 1;

static uint32_t pgd_index(uint64_t va) { return (uint32_t)(va >> 22) & (PGD_ENTRIES - 1); }
static uint32_t pte_index(uint64_t va) { return (uint32_t)(va >> 12) & (PTE_ENTRIES - 1); }

/* Each address space has its own ASID for life, so switching needs no TLB flush.
 * Address spaces are never freed (nor is any page: page_alloc.c), so 255 is the
 * limit on programs started in one boot; the workloads and self-tests start fewer
 * than 40. */
uintptr_t paging_new_address_space(void) {
  if (next_asid > MAX_ASID) panic("out of ASIDs: more than %d programs started", MAX_ASID);
  uint32_t *pgd = (uint32_t *)alloc_page();
  for (int i = 0; i < PGD_ENTRIES; i++) pgd[i] = (uint32_t)(uintptr_t)invalid_pte_table;
  return (uintptr_t)pgd | next_asid++;
}

static uint32_t *pte_table(uintptr_t root, uint64_t va, int allocate) {
  uint32_t *pgd = (uint32_t *)(root & ~0xfffu);
  uint32_t *table = (uint32_t *)(uintptr_t)pgd[pgd_index(va)];
  if (table == invalid_pte_table && allocate) {
    table = (uint32_t *)alloc_page();
    pgd[pgd_index(va)] = (uint32_t)(uintptr_t)table;
  }
  return table;
}

void paging_map_user(uintptr_t root, uint64_t va, uintptr_t pa, uint64_t flags) {
  uint32_t *table = pte_table(root, va, 1);
  table[pte_index(va)] = ((uint32_t)__pa(pa) >> ENTRYLO_PFN_SHIFT) | (uint32_t)flags;
}

uintptr_t paging_user_to_phys(uintptr_t root, uint64_t va, int write) {
  uint32_t pte = pte_table(root, va, 0)[pte_index(va)];
  uint32_t want = ENTRYLO_V | (write ? ENTRYLO_D : 0);
  if ((pte & want) != want) return 0;
  return __va((pte >> ENTRYLO_PFN_SHIFT) << 12) | (uint32_t)(va & 0xfff);
}
