/*
 * A bump allocator. Pages never handed out before are zero, because the VMM backs
 * guest RAM with fresh anonymous memory: that saves clearing 4 KiB per page, which
 * costs thousands of emulated instructions on a PVM host. Nothing is freed yet.
 */
#include "guest-kit/kernel/page_alloc.h"

#include "asm/page.h"
#include "guest-kit/kernel/kernel.h"

static uint64_t next_free;
static uint64_t ram_end;

void page_alloc_init(uint64_t free_gpa, uint64_t mem_bytes) {
  next_free = (free_gpa + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
  ram_end = mem_bytes;
}

uintptr_t alloc_page(void) {
  if (next_free + PAGE_SIZE > ram_end) panic("out of memory");
  uint64_t page = next_free;
  next_free += PAGE_SIZE;
  return __va(page);
}
