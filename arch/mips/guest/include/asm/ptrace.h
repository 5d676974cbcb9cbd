/* The register frame every kernel entry saves on the kernel stack (entry.S), as
 * Linux MIPS's struct pt_regs: the o32 argument save area first (the C handler's
 * callee may store a0-a3 there), then the 32 general registers, hi/lo and CP0. */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_PTRACE_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_PTRACE_H_

#define PT_R(n) (16 + 4 * (n))
#define PT_LO 144
#define PT_HI 148
#define PT_EPC 152
#define PT_BADVADDR 156
#define PT_STATUS 160
#define PT_CAUSE 164
#define PT_SIZE 168

#ifndef __ASSEMBLER__
#include <stdint.h>

#include "asm/mipsregs.h"

struct pt_regs {
  uint32_t pad0[4];
  uint32_t regs[32];
  uint32_t lo, hi;
  uint32_t cp0_epc, cp0_badvaddr, cp0_status, cp0_cause;
};

_Static_assert(sizeof(struct pt_regs) == PT_SIZE, "entry.S's frame layout");

static inline int user_mode(const struct pt_regs *regs) {
  return (regs->cp0_status & ST0_KSU_USER) != 0;
}
#endif

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_PTRACE_H_ */
