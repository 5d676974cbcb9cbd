/*
 * mips_trap: where every exception arrives (entry.S's general vector).
 *
 * System calls are `syscall` with the o32 registers (asm/syscall.h). Any other
 * exception from user mode becomes the signal Linux MIPS sends. In kernel mode, a
 * fault at a user access resumes at its fixup (asm/uaccess.h); anything else is a
 * panic reported to the VMM. Interrupts are taken only by the parked cores (the
 * IPI: smp.c).
 */
#include "asm/mipsregs.h"
#include "asm/ptrace.h"
#include "asm/uaccess.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/signal.h"
#include "guest-kit/kernel/syscall.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/signal.h"

/* `break` and trap codes Linux gives a meaning (asm/break.h). */
#define BRK_OVERFLOW 6
#define BRK_DIVZERO 7

void exit_to_user_mode(struct pt_regs *regs);
int64_t sys_rt_sigreturn(struct pt_regs *regs);
void mips_ipi_interrupt(void);

/* The instruction that raised the exception: at EPC, or after the branch when it
 * sat in a delay slot. 0 if it cannot be read. */
static uint32_t faulting_insn(const struct pt_regs *regs) {
  uint32_t insn = 0;
  uint32_t pc = regs->cp0_epc + ((regs->cp0_cause & CAUSE_BD) ? 4 : 0);
  if (get_user(insn, (const uint32_t *)(uintptr_t)pc)) return 0;
  return insn;
}

/* Linux's do_trap_or_bp: the code of a `break` or conditional trap says why. */
static void trap_or_break(const struct pt_regs *regs, uint32_t code) {
  switch (code) {
    case BRK_DIVZERO: force_sig_fault(SIGFPE, FPE_INTDIV, regs->cp0_epc); break;
    case BRK_OVERFLOW: force_sig_fault(SIGFPE, FPE_INTOVF, regs->cp0_epc); break;
    default: force_sig_fault(SIGTRAP, SI_KERNEL, 0); break;
  }
}

/* The signal, si_code and si_addr a user-mode exception gets. */
static void user_exception(struct pt_regs *regs, uint32_t code) {
  const uint32_t bad = regs->cp0_badvaddr;
  switch (code) {
    case EXC_MOD:
      current->fault_address = bad;
      force_sig_fault(SIGSEGV, SEGV_ACCERR, bad);
      break;
    case EXC_TLBL:
    case EXC_TLBS:
      current->fault_address = bad;
      force_sig_fault(SIGSEGV, SEGV_MAPERR, bad);
      break;
    case EXC_ADEL:
    case EXC_ADES: /* unaligned, or a kernel address (Linux's do_ade: SIGBUS) */
      current->fault_address = bad;
      force_sig_fault(SIGBUS, BUS_ADRERR, bad);
      break;
    case EXC_BP: trap_or_break(regs, (faulting_insn(regs) >> 16) & 0x3ff); break;
    case EXC_TR: trap_or_break(regs, (faulting_insn(regs) >> 6) & 0x3ff); break;
    case EXC_RI: force_sig_fault(SIGILL, ILL_ILLOPC, regs->cp0_epc); break;
    case EXC_CPU: force_sig_fault(SIGILL, ILL_COPROC, regs->cp0_epc); break; /* no FPU; CP0 */
    case EXC_OV: force_sig_fault(SIGFPE, FPE_INTOVF, regs->cp0_epc); break;
    default: force_sig_fault(SIGBUS, BUS_ADRERR, regs->cp0_epc); break; /* bus errors */
  }
}

static void kernel_exception(struct pt_regs *regs, uint32_t code) {
  uintptr_t fixup = search_exception_table(regs->cp0_epc);
  if (fixup) {
    regs->cp0_epc = (uint32_t)fixup;
    return;
  }
  panic_at(regs->cp0_epc, code, "kernel exception %u at %#x, BadVAddr %#x, Cause %#x, ra %#x",
           code, regs->cp0_epc, regs->cp0_badvaddr, regs->cp0_cause, regs->regs[31]);
}

void mips_trap(struct pt_regs *regs) {
  const uint32_t code = CAUSE_EXCCODE(regs->cp0_cause);
  if (code == EXC_INT) {
    if (regs->cp0_cause & CAUSE_IP2) mips_ipi_interrupt();
    return;
  }
  if (!user_mode(regs)) {
    kernel_exception(regs, code);
    return;
  }
  if (code == EXC_SYS) {
    regs->cp0_epc += 4; /* resume after the `syscall` (never in a delay slot here) */
    /* rt_sigreturn restores every register from the frame: it has no result to set
     * in v0 and a3 (Linux MIPS returns from it the same way). */
    if (regs->regs[2] == SYS_rt_sigreturn) sys_rt_sigreturn(regs);
    else syscall_dispatch(regs);
  } else {
    user_exception(regs, code);
  }
  exit_to_user_mode(regs);
}
