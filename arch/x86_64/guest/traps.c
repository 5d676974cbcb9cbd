/*
 * x86_trap: where every exception and system call arrives (see entry.S).
 *
 * System calls use `int $0x80`. On hardware KVM that is a DPL3 gate to vector 0x80.
 * On a PVM host `INT n` (n != 3) from CPL3 raises #UD instead, and SYSCALL does not
 * raise privilege at all (kvm-host-notes.md), so the #UD handler recognises the
 * `cd 80` bytes at the faulting RIP, steps over them and takes the same path: one
 * user-visible convention that works on both hosts. Any other exception from user
 * mode becomes the signal Linux would send; from kernel mode it is a panic.
 */
#include "arch/x86_64/guest/paging.h"
#include "arch/x86_64/guest/pt_regs.h"
#include "arch/x86_64/guest/x86.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/signal.h"
#include "guest-kit/kernel/syscall.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/signal.h"
#include "guest-kit/uapi/syscalls.h"

#define VECTOR_DE 0
#define VECTOR_BP 3
#define VECTOR_UD 6
#define VECTOR_GP 13
#define VECTOR_PF 14
#define VECTOR_SYSCALL 0x80

/* True when the user instruction at `rip` is `int $0x80` (cd 80). */
static int is_int80(uint64_t rip) {
  if (rip < USER_BASE || rip > USER_TOP - 2) return 0;
  uint64_t first = paging_user_to_phys(current->page_table, rip, 0);
  uint64_t second = paging_user_to_phys(current->page_table, rip + 1, 0);
  return first && second && *(const uint8_t *)first == 0xcd && *(const uint8_t *)second == 0x80;
}

static int signal_for_vector(uint64_t vector) {
  switch (vector) {
    case VECTOR_DE: return SIGFPE;
    case VECTOR_BP: return SIGTRAP;
    case VECTOR_UD: return SIGILL;
    case VECTOR_PF: return SIGSEGV;
    case VECTOR_GP: return SIGSEGV;
    default: return SIGBUS;
  }
}

void x86_trap(struct pt_regs *regs) {
  if (regs->vector == VECTOR_SYSCALL) {
    syscall_dispatch(regs);
    return;
  }
  if (!user_mode(regs)) {
    panic_at(regs->rip, regs->vector, "kernel exception %lu (error %#lx) at %#lx, cr2 %#lx",
             regs->vector, regs->error_code, regs->rip, read_cr2());
  }
  if (regs->vector == VECTOR_UD && is_int80(regs->rip)) {
    regs->rip += 2;
    syscall_dispatch(regs);
    return;
  }
  uint64_t addr = regs->vector == VECTOR_PF ? read_cr2() : regs->rip;
  force_signal(regs, signal_for_vector(regs->vector), regs->vector, addr);
}
