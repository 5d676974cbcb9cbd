/*
 * Paravirtual debug registers (CONFIG_DEBUGREG_PV; the VMM's --trap=pv): the
 * kernel's debug-register writes go into the page the VMM shares with it
 * (guest-kit/abi/sigvisor_abi.h, "The paravirtual debug-register page"): the value,
 * a per-register write counter and a count per calling site, with no exit. Only a
 * write that changes what the hardware must hold (a breakpoint enabled, disabled or
 * moved; any DR6 write) asks the VMM to load the registers, with one hypercall.
 *
 * Where CPL0 is emulated every instruction here costs about a microsecond, so the
 * common case (DR7 written with no breakpoint enabled before or after, as the
 * baseline signal path does) is kept to a few loads, stores and compares.
 *
 * Without a page from the VMM (any other --trap, or QEMU) the writes are the same
 * `mov %dbN` the native build makes.
 */
#include "arch/x86_64/guest/debugreg.h"

#if CONFIG_DEBUGREG_PV

#include "asm/hypercall.h"
#include "asm/page.h"
#include "guest-kit/kernel/kernel.h"

#define DR7_ENABLES 0xffull /* L0, G0, ..., L3, G3 */

static struct sigvisor_pv_page *pv_page; /* NULL: no page, native moves */
/* The sites[] entry the last write counted in: the signal path writes from one site
 * again and again, so it is looked at first. */
static uint32_t last_site;

void pv_debugreg_init(const struct sigvisor_boot_info *boot) {
  const uint64_t gpa = boot->pv_page_gpa;
  if (gpa == 0) return;
  if ((gpa & (SIGVISOR_PV_PAGE_BYTES - 1)) != 0 || gpa + SIGVISOR_PV_PAGE_BYTES > boot->mem_bytes)
    panic("the boot info's pv page at %#lx is not a page of RAM", gpa);
  struct sigvisor_pv_page *page = (struct sigvisor_pv_page *)__va(gpa);
  if (page->magic != SIGVISOR_PV_PAGE_MAGIC || page->abi_version != SIGVISOR_ABI_VERSION)
    panic("the pv page at %#lx has magic %#x, ABI %u", gpa, page->magic, page->abi_version);
  pv_page = page;
}

/* One more write of `kind` from `site`. With every entry taken the write is counted
 * in the per-register counter only, and the VMM reports it under no site. */
static inline __attribute__((always_inline)) void count_site(uint64_t site, uint32_t kind) {
  struct sigvisor_pv_site *entry = &pv_page->sites[last_site];
  if (entry->address == site && entry->kind == kind) {
    entry->count++;
    return;
  }
  for (uint32_t i = 0; i < SIGVISOR_PV_SITES; i++) {
    entry = &pv_page->sites[i];
    if (entry->kind == 0) { /* free: the first write from this site */
      entry->address = site;
      entry->kind = kind;
    }
    if (entry->address == site && entry->kind == kind) {
      entry->count++;
      last_site = i;
      return;
    }
  }
}

/* Whether the hardware must change after a write to DR`index`: the same test as the
 * VMM's shadow (arch/x86_64/vmm/trap/dr_shadow.h), against what the VMM last loaded. */
static int needs_load(int index) {
  const struct sigvisor_pv_page *page = pv_page;
  if (index == 6) return 1; /* the hardware's DR6 status bits are the VMM's to know */
  const uint64_t dr7 = page->dr[7], loaded7 = page->loaded[7];
  if (((dr7 | loaded7) & DR7_ENABLES) == 0) return 0; /* no breakpoint, before or after */
  if ((dr7 ^ loaded7) & DR7_ENABLES) return 1;
  for (int i = 0; i < 4; i++) {
    if (((dr7 >> (2 * i)) & 3) == 0) continue;
    if (page->dr[i] != page->loaded[i] || (((dr7 ^ loaded7) >> (16 + 4 * i)) & 0xf) != 0)
      return 1;
  }
  return 0;
}

__attribute__((noinline)) void pv_set_debugreg(int index, uint64_t value) {
  if (!pv_page) {
    native_set_debugreg(index, value);
    return;
  }
  if ((unsigned)index > 7 || index == 4 || index == 5) return;
  pv_page->dr[index] = value;
  pv_page->dr_writes[index]++;
  count_site((uint64_t)__builtin_return_address(0), SIGVISOR_PV_SITE_DR_WRITE);
  if (needs_load(index)) arch_hypercall(SIGVISOR_HC_PV_DEBUGREG_LOAD, pv_page);
}

__attribute__((noinline)) void pv_count_segment_base_write(uint32_t msr) {
  const uint32_t which = msr - SIGVISOR_PV_MSR_FS_BASE;
  if (!pv_page || which > 2) return;
  pv_page->seg_base_writes[which]++;
  count_site((uint64_t)__builtin_return_address(0), SIGVISOR_PV_SITE_SEGMENT_BASE);
}

#endif /* CONFIG_DEBUGREG_PV */
