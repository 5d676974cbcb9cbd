/* Physical page allocator: hands out pages from the RAM the VMM says is free. */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_PAGE_ALLOC_H_
#define SIGVISOR_GUEST_KIT_KERNEL_PAGE_ALLOC_H_

#include <stdint.h>

void page_alloc_init(uint64_t free_gpa, uint64_t mem_bytes);

/* A zeroed page's kernel address (__va of its physical address: the same number on
 * x86-64's identity map, its kseg0 address on MIPS). Panics when RAM is exhausted. */
uintptr_t alloc_page(void);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_PAGE_ALLOC_H_ */
