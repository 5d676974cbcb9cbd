/*
 * Built-in programs are static ELF images linked at USER_BASE and embedded
 * page-aligned in the kernel. Read-only segments are mapped straight from the
 * embedded pages; writable ones get fresh pages with the bytes copied in. Images
 * are built with the kernel, but the loader still checks every header field it
 * uses: a wrong image must fail here, not fault later.
 */
#include "guest-kit/kernel/exec.h"

#include "asm/elf.h"
#include "asm/paging.h"
#include "asm/processor.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/page_alloc.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/lib/string.h"
#include "guest-kit/uapi/syscalls.h"

static int map_segment(struct task *task, const uint8_t *image, size_t image_size,
                       const elf_phdr_t *ph) {
  if (ph->p_filesz > ph->p_memsz || ph->p_offset > image_size ||
      ph->p_filesz > image_size - ph->p_offset || ph->p_vaddr < USER_BASE ||
      ph->p_memsz > USER_TOP - ph->p_vaddr || (ph->p_vaddr & (PAGE_SIZE - 1)) != 0 ||
      (ph->p_offset & (PAGE_SIZE - 1)) != 0)
    return -EINVAL;
  uint64_t flags = (ph->p_flags & PF_W) ? PAGE_USER_RW : PAGE_USER_RO;
  if (ph->p_flags & PF_X) flags &= ~PAGE_NX;
  for (uint64_t off = 0; off < ph->p_memsz; off += PAGE_SIZE) {
    uintptr_t page;
    /* A read-only page with no bss in it is shared with the embedded image (whose
     * section is padded to a page boundary); copying it would cost thousands of
     * emulated instructions. */
    if (!(ph->p_flags & PF_W) && off < ph->p_filesz && ph->p_memsz == ph->p_filesz) {
      page = (uintptr_t)(image + ph->p_offset + off);
    } else {
      page = alloc_page();
      if (off < ph->p_filesz) {
        uint64_t n = ph->p_filesz - off < PAGE_SIZE ? ph->p_filesz - off : PAGE_SIZE;
        memcpy((void *)page, image + ph->p_offset + off, n);
      }
    }
    paging_map_user(task->page_table, ph->p_vaddr + off, page, flags);
  }
  return 0;
}

int exec_program(struct task *task, const uint8_t *image, size_t image_size, const char *arg,
                 struct pt_regs *regs) {
  const elf_ehdr_t *eh = (const elf_ehdr_t *)image;
  if (image_size < sizeof(*eh) || *(const uint32_t *)eh->e_ident != ELF_MAGIC ||
      eh->e_phentsize != sizeof(elf_phdr_t) || eh->e_phoff > image_size ||
      (uint64_t)eh->e_phnum * sizeof(elf_phdr_t) > image_size - eh->e_phoff)
    return -EINVAL;
  const elf_phdr_t *ph = (const elf_phdr_t *)(image + eh->e_phoff);
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type != PT_LOAD || ph[i].p_memsz == 0) continue;
    int err = map_segment(task, image, image_size, &ph[i]);
    if (err) return err;
  }

  /* The stack: USER_STACK_PAGES below USER_STACK_TOP; the argument string sits at
   * its top. */
  uintptr_t top_page = 0;
  for (uint64_t i = 1; i <= USER_STACK_PAGES; i++) {
    uintptr_t page = alloc_page();
    if (i == 1) top_page = page;
    paging_map_user(task->page_table, USER_STACK_TOP - i * PAGE_SIZE, page, PAGE_USER_RW);
  }
  size_t len = strnlen(arg, SIGVISOR_CMDLINE_MAX - 1);
  uint64_t arg_offset = (PAGE_SIZE - (len + 1)) & ~15ul;
  memcpy((void *)(uintptr_t)(top_page + arg_offset), arg, len);
  uint64_t user_arg = USER_STACK_TOP - PAGE_SIZE + arg_offset;
  arch_setup_additional_pages(task); /* the vdso, where the arch has one */

  memset(regs, 0, sizeof(*regs));
  start_thread(regs, eh->e_entry, user_arg);
  return 0;
}
