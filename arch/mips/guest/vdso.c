/* Maps a vdso page read-only into a new program, as Linux's
 * arch_setup_additional_pages(). Every process gets it whichever trampoline the
 * kernel was built with: the choice is made in one place, setup_rt_frame().
 *
 * The page is the VMM's when the boot info names one (under sigvisor: one host page
 * that every core shares, which the VMM counts fetches from), else the kernel's own
 * copy (vdso.S; under QEMU). Both hold the same words (the ABI header's). */
#include "asm/vdso.h"

#include "asm/elf.h"
#include "asm/page.h"
#include "asm/paging.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/syscalls.h"

_Static_assert(SIGVISOR_VDSO_SYS_RT_SIGRETURN == SYS_rt_sigreturn,
               "the VMM's trampoline makes the kernel's rt_sigreturn");
_Static_assert(MIPS_VDSO_BASE == USER_VDSO_BASE, "user programs find the vdso there");

extern const char vdso_page[];

/* The kseg0 address of the page every process maps. */
static const char *vdso = vdso_page;

void mips_vdso_init(const struct sigvisor_boot_info *boot) {
  const uint32_t gpa = boot->vdso_gpa;
  if (gpa == 0) return;
  /* kseg0 reaches the first 512 MiB; the page is the VMM's, never RAM. */
  if ((gpa & 0xfffu) != 0 || gpa >= KSEG1 - KSEG0 || gpa < boot->mem_bytes)
    panic("the boot info's vdso page at %#x is not a page above RAM below 512 MiB", gpa);
  vdso = (const char *)__va(gpa);
}

void arch_setup_additional_pages(struct task *task) {
  paging_map_user(task->page_table, MIPS_VDSO_BASE, (uintptr_t)vdso, PAGE_USER_RO);
}
