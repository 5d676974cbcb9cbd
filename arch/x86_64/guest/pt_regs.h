/* The register frame every kernel entry saves on the kernel stack, in the order
 * entry.S pushes it (Linux's struct pt_regs layout). */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_
#define SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_

#include <stddef.h>
#include <stdint.h>

#include "guest-kit/abi/white_box.h"

struct pt_regs {
  uint64_t r15, r14, r13, r12, rbp, rbx;
  uint64_t r11, r10, r9, r8, rax, rcx, rdx, rsi, rdi;
  uint64_t vector;     /* pushed by the entry stub */
  uint64_t error_code; /* pushed by the CPU, or 0 by the stub */
  /* The hardware interrupt frame. */
  uint64_t rip, cs, rflags, rsp, ss;
};

/* The host reads these fields at the offsets white_box.h gives it. */
#ifdef __cplusplus
static_assert(offsetof(struct pt_regs, rax) == SIGVISOR_WB_PT_REGS_RAX, "pt_regs.rax moved");
#else
_Static_assert(offsetof(struct pt_regs, rax) == SIGVISOR_WB_PT_REGS_RAX, "pt_regs.rax moved");
#endif

static inline int user_mode(const struct pt_regs *regs) { return (regs->cs & 3) == 3; }

#endif /* SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_ */
