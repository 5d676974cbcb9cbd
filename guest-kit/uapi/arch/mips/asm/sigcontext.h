/* The MIPS o32 rt frame's user-visible parts, as Linux MIPS o32 has them
 * (arch/mips/include/uapi/asm/{sigcontext,ucontext,signal}.h). The sigset is the
 * kernel's 64 signals, in a 128-bit slot as Linux MIPS's. */
#ifndef SIGVISOR_GUEST_KIT_UAPI_ARCH_MIPS_ASM_SIGCONTEXT_H_
#define SIGVISOR_GUEST_KIT_UAPI_ARCH_MIPS_ASM_SIGCONTEXT_H_

#include <stddef.h>
#include <stdint.h>

/* No SA_RESTORER on MIPS: the kernel provides the trampoline (on the user stack, or
 * in the vdso: CONFIG_TRAMP_VDSO, seed 004). */

typedef struct sigaltstack {
  void *ss_sp;
  size_t ss_size;
  int ss_flags;
} stack_t;

/* o32's struct sigcontext: 64-bit slots for the 32-bit registers. */
struct sigcontext {
  uint32_t sc_regmask; /* unused */
  uint32_t sc_status;  /* unused */
  uint64_t sc_pc;
  uint64_t sc_regs[32];
  uint64_t sc_fpregs[32];
  uint32_t sc_acx;
  uint32_t sc_fpc_csr;
  uint32_t sc_fpc_eir;
  uint32_t sc_used_math; /* 0: no FPU state (the guest has no FPU) */
  uint32_t sc_dsp;
  uint64_t sc_mdhi;
  uint64_t sc_mdlo;
  uint32_t sc_hi1, sc_lo1, sc_hi2, sc_lo2, sc_hi3, sc_lo3;
};

typedef struct ucontext {
  uint32_t uc_flags;
  struct ucontext *uc_link;
  stack_t uc_stack;
  struct sigcontext uc_mcontext;
  sigset_t uc_sigmask;
  uint64_t __uc_sigmask_high; /* Linux MIPS's sigset_t is 128 bits */
} ucontext_t;

#endif /* SIGVISOR_GUEST_KIT_UAPI_ARCH_MIPS_ASM_SIGCONTEXT_H_ */
