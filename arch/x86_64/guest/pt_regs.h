/* The register frame every kernel entry saves on the kernel stack, in the order
 * entry.S pushes it (Linux's struct pt_regs layout). */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_
#define SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_

#include <stddef.h>
#include <stdint.h>

#include "guest-kit/abi/white_box.h"

/* r15 ... rdi, vector, error_code, then the hardware interrupt frame (rip, cs,
 * rflags, rsp, ss): the field list is white_box.h's, which the host reads by. */
struct pt_regs {
#define PT_REGS_FIELD(name) uint64_t name;
  SIGVISOR_WB_PT_REGS_FIELDS(PT_REGS_FIELD)
#undef PT_REGS_FIELD
};

/* The host reads these fields at the offsets white_box.h gives it. */
#ifdef __cplusplus
static_assert(offsetof(struct pt_regs, rax) == SIGVISOR_WB_PT_REGS_RAX, "pt_regs.rax moved");
#else
_Static_assert(offsetof(struct pt_regs, rax) == SIGVISOR_WB_PT_REGS_RAX, "pt_regs.rax moved");
#endif

static inline int user_mode(const struct pt_regs *regs) { return (regs->cs & 3) == 3; }

#endif /* SIGVISOR_ARCH_X86_64_GUEST_PT_REGS_H_ */
