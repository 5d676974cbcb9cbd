/* Entering user mode and switching tasks on MIPS (entry.S), for task.c. */
#ifndef SIGVISOR_ARCH_MIPS_GUEST_ASM_SWITCH_TO_H_
#define SIGVISOR_ARCH_MIPS_GUEST_ASM_SWITCH_TO_H_

#include <stdint.h>

#include "asm/ptrace.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/lib/string.h"

void mips_enter_user(struct pt_regs *regs) __attribute__((noreturn));
void mips_switch_to(uintptr_t *prev_sp, uintptr_t next_sp);
void mips_ret_from_spawn(void);

#define SWITCH_FRAME_WORDS 12 /* s0-s8, gp, ra, and a pad word (entry.S) */

static inline __attribute__((noreturn)) void enter_user_mode(struct pt_regs *regs) {
  mips_enter_user(regs);
}

/* The first switch to the child "returns" into mips_ret_from_spawn with sp at the
 * prepared pt_regs. */
static inline void copy_thread(struct task *child) {
  uint32_t *frame = (uint32_t *)task_pt_regs(child) - SWITCH_FRAME_WORDS;
  memset(frame, 0, SWITCH_FRAME_WORDS * sizeof(uint32_t));
  frame[10] = (uint32_t)(uintptr_t)mips_ret_from_spawn; /* ra */
  child->saved_rsp = (uintptr_t)frame;
}

static inline void switch_to(struct task *prev, struct task *next) {
  mips_switch_to(&prev->saved_rsp, next->saved_rsp);
}

#endif /* SIGVISOR_ARCH_MIPS_GUEST_ASM_SWITCH_TO_H_ */
