/*
 * Signal frames on MIPS o32 (Linux's arch/mips/kernel/signal.c in miniature): the
 * rt frame on the user stack, the return trampoline, sigreturn, and the delivery
 * loop on the way back to user mode. Seed 002 (cumulative-error user copies) and
 * seed 004 (the trampoline: stack or vdso) are here.
 */
#include "guest-kit/kernel/signal.h"

#include "asm/ptrace.h"
#include "asm/smp.h"
#include "asm/uaccess.h"
#include "asm/vdso.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/signal.h"

/* What the handler finds at its sp: the o32 argument save area, the trampoline
 * slot, the siginfo and the ucontext (Linux MIPS's struct rt_sigframe; after the
 * vdso change Linux kept rs_code as unused padding, as this kernel does with
 * CONFIG_TRAMP_VDSO). */
struct rt_sigframe {
  uint32_t rs_ass[4];
  uint32_t rs_code[2];
  siginfo_t rs_info;
  struct ucontext rs_uc;
};

#define SS_DISABLE 2
#define REG_SP 29
#define REG_RA 31
#define REG_T9 25

/*
 * Seed 002, as on x86-64. Baseline: every user access returns its own error and the
 * caller ORs it into `err`. CONFIG_UACCESS_CERR: the accessor's fixup ORs -EFAULT
 * into `err` itself.
 */
#if CONFIG_UACCESS_CERR
#define PUT_USER_FIELD(value, uptr, err) __put_user_cerr((value), (uptr), (err))
#define GET_USER_FIELD(value, uptr, err) __get_user_cerr((value), (uptr), (err))
#else
#define PUT_USER_FIELD(value, uptr, err) ((err) |= __put_user((value), (uptr)))
#define GET_USER_FIELD(value, uptr, err) ((err) |= __get_user((value), (uptr)))
#endif

static int setup_sigcontext(struct sigcontext *sc, const struct pt_regs *regs) {
  int err = 0;
  PUT_USER_FIELD((uint64_t)regs->cp0_epc, &sc->sc_pc, err);
  PUT_USER_FIELD((uint64_t)0, &sc->sc_regs[0], err);
  for (int i = 1; i < 32; i++) PUT_USER_FIELD((uint64_t)regs->regs[i], &sc->sc_regs[i], err);
  PUT_USER_FIELD((uint64_t)regs->hi, &sc->sc_mdhi, err);
  PUT_USER_FIELD((uint64_t)regs->lo, &sc->sc_mdlo, err);
  PUT_USER_FIELD((uint32_t)0, &sc->sc_used_math, err);
  return err;
}

static int restore_sigcontext(struct pt_regs *regs, const struct sigcontext *sc) {
  int err = 0;
  uint64_t value;
  GET_USER_FIELD(value, &sc->sc_pc, err);
  regs->cp0_epc = (uint32_t)value;
  GET_USER_FIELD(value, &sc->sc_mdhi, err);
  regs->hi = (uint32_t)value;
  GET_USER_FIELD(value, &sc->sc_mdlo, err);
  regs->lo = (uint32_t)value;
  for (int i = 1; i < 32; i++) {
    GET_USER_FIELD(value, &sc->sc_regs[i], err);
    regs->regs[i] = (uint32_t)value;
  }
  return err;
}

/* Below the interrupted sp, leaving 32 bytes (Linux: room for an FPU emulator
 * trampoline), 8-byte aligned as o32 wants. */
static uintptr_t get_sigframe(const struct pt_regs *regs) {
  uintptr_t sp = regs->regs[REG_SP] - 32;
  return (sp - sizeof(struct rt_sigframe)) & ~(uintptr_t)7;
}

static int setup_rt_frame(struct ksignal *ksig, sigset_t saved_mask, struct pt_regs *regs) {
  const uintptr_t sp = get_sigframe(regs);
  struct rt_sigframe *frame = (struct rt_sigframe *)sp;
  if (!access_ok(sp, sizeof(*frame))) return -EFAULT;

  int err = 0;
  /*
   * Seed 004. Baseline: the trampoline `li v0, SYS_rt_sigreturn; syscall` (the ABI
   * header's words, as in the vdso page) is written into the frame for every signal,
   * and the instruction fetch of every core must then be made to see it (a flush
   * here, an IPI to each other core).
   * CONFIG_TRAMP_VDSO: the handler returns into the vdso page every process has (the
   * VMM's under sigvisor, the kernel's own under QEMU: vdso.c); nothing is written
   * or flushed.
   */
#if CONFIG_TRAMP_VDSO
  const uintptr_t trampoline = MIPS_VDSO_BASE + VDSO_RT_SIGRETURN_OFFSET;
#else
  const uintptr_t trampoline = (uintptr_t)frame->rs_code;
  PUT_USER_FIELD(SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN0, &frame->rs_code[0], err);
  PUT_USER_FIELD(SIGVISOR_MIPS_VDSO_RT_SIGRETURN_INSN1, &frame->rs_code[1], err);
  if (!err) flush_cache_sigtramp(trampoline);
#endif

  if (ksig->action.flags & SA_SIGINFO) err |= copy_siginfo_to_user(&frame->rs_info, ksig->info);
  PUT_USER_FIELD((uint32_t)0, &frame->rs_uc.uc_flags, err);
  PUT_USER_FIELD((uint32_t)0, (uint32_t *)&frame->rs_uc.uc_link, err);
  PUT_USER_FIELD((uint32_t)0, (uint32_t *)&frame->rs_uc.uc_stack.ss_sp, err);
  PUT_USER_FIELD((uint32_t)0, &frame->rs_uc.uc_stack.ss_size, err);
  PUT_USER_FIELD(SS_DISABLE, &frame->rs_uc.uc_stack.ss_flags, err);
  err |= setup_sigcontext(&frame->rs_uc.uc_mcontext, regs);
  PUT_USER_FIELD(saved_mask, &frame->rs_uc.uc_sigmask, err);
  if (err) return -EFAULT;

  /* handler(signo, &info, &uc) with ra = the trampoline, as Linux MIPS. */
  regs->regs[4] = (uint32_t)ksig->signo;
  regs->regs[5] = (uint32_t)(uintptr_t)&frame->rs_info;
  regs->regs[6] = (uint32_t)(uintptr_t)&frame->rs_uc;
  regs->regs[REG_SP] = (uint32_t)sp;
  regs->regs[REG_RA] = (uint32_t)trampoline;
  regs->regs[REG_T9] = (uint32_t)(uintptr_t)ksig->action.handler;
  regs->cp0_epc = (uint32_t)(uintptr_t)ksig->action.handler;
  return 0;
}

static void handle_signal(struct ksignal *ksig, struct pt_regs *regs) {
  if (setup_rt_frame(ksig, signal_mask_to_save(), regs) < 0) {
    signal_failed(ksig);
    force_sigsegv(ksig->signo);
    return;
  }
  signal_delivered(ksig);
}

void exit_to_user_mode(struct pt_regs *regs) {
  struct task *self = current;
  struct ksignal ksig;
  while (signal_pending(self) && get_signal(&ksig)) handle_signal(&ksig, regs);
  restore_saved_sigmask();
}

int64_t sys_rt_sigreturn(struct pt_regs *regs) {
  /* The handler returned with sp restored: the frame starts at sp. */
  const struct rt_sigframe *frame = (const struct rt_sigframe *)(uintptr_t)regs->regs[REG_SP];
  sigset_t mask;
  if (!access_ok((uintptr_t)frame, sizeof(*frame)) || __get_user(mask, &frame->rs_uc.uc_sigmask) ||
      restore_sigcontext(regs, &frame->rs_uc.uc_mcontext)) {
    force_sigsegv(0);
    return 0;
  }
  set_blocked(mask);
  return 0; /* the caller sets no result: every register came from the frame */
}
