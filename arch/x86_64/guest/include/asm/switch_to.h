/* Entering user mode and switching tasks on x86-64 (entry.S), for task.c. */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_ASM_SWITCH_TO_H_
#define SIGVISOR_ARCH_X86_64_GUEST_ASM_SWITCH_TO_H_

#include <stdint.h>

#include "arch/x86_64/guest/debugreg.h"
#include "arch/x86_64/guest/pt_regs.h"
#include "arch/x86_64/guest/x86.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/lib/string.h"

#if CONFIG_SMP
#include "guest-kit/kernel/smp.h"
#endif

void x86_enter_user(struct pt_regs *regs) __attribute__((noreturn));
void x86_switch_to(uint64_t *prev_rsp, uint64_t next_rsp);
void x86_ret_from_spawn(void);

/* Makes `page_table` (the root's physical address) the current address space. */
static inline void switch_mm(uint64_t page_table) { write_cr3(page_table); }

/* Leaves the kernel through `regs` (the first task's first entry to user mode). */
static inline __attribute__((noreturn)) void enter_user_mode(struct pt_regs *regs) {
#if CONFIG_SMP
  unlock_kernel(); /* taken at boot (smp_boot_cpus); interrupts stay off until the iretq */
#endif
  x86_enter_user(regs);
}

#if CONFIG_SMP
void x86_idle_entry(void);

/* smp=on: CPU 0's idle task, whose first switch-in "returns" into x86_idle_entry
 * (the idle loop) on its own stack, as copy_thread prepares a spawned task. */
static inline void copy_idle_thread(struct task *idle) {
  uint64_t *frame = (uint64_t *)idle->kernel_stack_top - 7;
  memset(frame, 0, 6 * sizeof(uint64_t));
  frame[6] = (uint64_t)x86_idle_entry;
  idle->saved_rsp = (uint64_t)frame;
}
#endif

/* Prepares a new task's kernel stack so that the first switch to it "returns" into
 * x86_ret_from_spawn with its stack at the prepared pt_regs: six callee-saved
 * registers and a return address. */
static inline void copy_thread(struct task *child) {
  uint64_t *frame = (uint64_t *)task_pt_regs(child) - 7;
  memset(frame, 0, 6 * sizeof(uint64_t));
  frame[6] = (uint64_t)x86_ret_from_spawn;
  child->saved_rsp = (uint64_t)frame;
}

static inline void switch_debug_registers(struct task *prev, struct task *next) {
  if (!prev->debugreg[7] && !next->debugreg[7]) return;
  for (int i = 0; i < 4; i++) set_debugreg(i, next->debugreg[i]);
  set_debugreg7(next->debugreg[7]);
}

/* Switches from `prev`'s kernel stack to `next`'s; returns when `prev` runs again. */
static inline void switch_to(struct task *prev, struct task *next) {
  switch_debug_registers(prev, next);
  x86_switch_to(&prev->saved_rsp, next->saved_rsp);
}

#endif /* SIGVISOR_ARCH_X86_64_GUEST_ASM_SWITCH_TO_H_ */
