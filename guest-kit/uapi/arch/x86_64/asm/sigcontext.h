/* The x86-64 rt frame's user-visible parts, as Linux x86-64 has them. */
#ifndef SIGVISOR_GUEST_KIT_UAPI_ARCH_X86_64_ASM_SIGCONTEXT_H_
#define SIGVISOR_GUEST_KIT_UAPI_ARCH_X86_64_ASM_SIGCONTEXT_H_

#include <stdint.h>

/* x86-64 has no kernel trampoline: the C library's restorer is required. */
#define SA_RESTORER 0x04000000u

typedef struct sigaltstack {
  uint64_t ss_sp;
  int ss_flags;
  int _pad;
  uint64_t ss_size;
} stack_t;

/* The saved user registers in the rt frame (Linux x86-64 struct sigcontext). */
struct sigcontext {
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
  uint16_t cs, gs, fs, ss;
  uint64_t err, trapno, oldmask, cr2;
  uint64_t fpstate; /* 0: no FPU state is saved (guest programs use general registers) */
  uint64_t reserved1[8];
};

typedef struct ucontext {
  uint64_t uc_flags;
  struct ucontext *uc_link;
  stack_t uc_stack;
  struct sigcontext uc_mcontext;
  sigset_t uc_sigmask;
} ucontext_t;

#endif /* SIGVISOR_GUEST_KIT_UAPI_ARCH_X86_64_ASM_SIGCONTEXT_H_ */
