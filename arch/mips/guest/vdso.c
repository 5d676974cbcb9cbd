/* Maps the vdso page (vdso.S) read-only into a new program, as Linux's
 * arch_setup_additional_pages(). Every process gets it whichever trampoline the
 * kernel was built with: the choice is made in one place, setup_rt_frame(). */
#include "asm/elf.h"
#include "asm/paging.h"
#include "asm/vdso.h"
#include "guest-kit/kernel/task.h"

extern const char vdso_page[];

void arch_setup_additional_pages(struct task *task) {
  paging_map_user(task->page_table, MIPS_VDSO_BASE, (uintptr_t)vdso_page, PAGE_USER_RO);
}
