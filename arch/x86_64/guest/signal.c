/*
 * Signal frames on x86-64 (Linux's arch/x86/kernel/signal.c in miniature): the rt
 * frame on the user stack, sigreturn, and the delivery loop on the way back to user
 * mode. Seeds 000 (the DR7 write) and 002 (cumulative-error user copies) are here.
 */
#include "guest-kit/kernel/signal.h"

#include "arch/x86_64/guest/debugreg.h"
#include "arch/x86_64/guest/pt_regs.h"
#include "arch/x86_64/guest/uaccess.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/signal.h"

#if CONFIG_SIGNAL_PV
#include "arch/x86_64/guest/pv_signal.h"
#endif

/* What the handler finds on its stack: the return address (the restorer), the
 * ucontext with the saved registers and mask, and the siginfo. */
struct rt_sigframe {
  uint64_t pretcode;
  struct ucontext uc;
  siginfo_t info;
};

/* The flags sigreturn may restore (Linux's FIX_EFLAGS): the rest stay the kernel's.
 * These and the red zone are white_box.h's: the signal=pv frame builder keeps them too. */
#define FIX_EFLAGS SIGVISOR_WB_SIGNAL_FIX_EFLAGS /* AC OF DF TF SF ZF AF PF CF RF */
#define HANDLER_CLEARS_EFLAGS SIGVISOR_WB_SIGNAL_HANDLER_CLEARS_EFLAGS /* TF DF */
#define SS_DISABLE 2
#define REDZONE SIGVISOR_WB_SIGNAL_REDZONE

/* The general registers in struct sigcontext, in one list for both directions. */
#define SIGCONTEXT_REGS(X) \
  X(r8) X(r9) X(r10) X(r11) X(r12) X(r13) X(r14) X(r15) \
  X(rdi) X(rsi) X(rbp) X(rbx) X(rdx) X(rax) X(rcx) X(rsp) X(rip)

/*
 * Seed 002. Baseline: every user access returns its own error and the caller ORs
 * it into `err` (`err |= __put_user(...)`), which the compiler keeps in memory.
 * CONFIG_UACCESS_CERR: the accessor's fixup ORs -EFAULT into `err` itself, which can
 * then live in a register (`__put_user_cerr(x, ptr, err)`).
 */
#if CONFIG_UACCESS_CERR
#define PUT_USER_FIELD(value, uptr, err) __put_user_cerr((value), (uptr), (err))
#define GET_USER_FIELD(value, uptr, err) __get_user_cerr((value), (uptr), (err))
#else
#define PUT_USER_FIELD(value, uptr, err) ((err) |= __put_user((value), (uptr)))
#define GET_USER_FIELD(value, uptr, err) ((err) |= __get_user((value), (uptr)))
#endif

static int setup_sigcontext(struct sigcontext *sc, const struct pt_regs *regs, sigset_t mask) {
  int err = 0;
#define SAVE_REG(name) PUT_USER_FIELD(regs->name, &sc->name, err);
  SIGCONTEXT_REGS(SAVE_REG)
#undef SAVE_REG
  PUT_USER_FIELD(regs->rflags, &sc->eflags, err);
  PUT_USER_FIELD((uint16_t)regs->cs, &sc->cs, err);
  PUT_USER_FIELD((uint16_t)0, &sc->gs, err);
  PUT_USER_FIELD((uint16_t)0, &sc->fs, err);
  PUT_USER_FIELD((uint16_t)regs->ss, &sc->ss, err);
  PUT_USER_FIELD(regs->error_code, &sc->err, err);
  PUT_USER_FIELD(regs->vector, &sc->trapno, err);
  PUT_USER_FIELD(mask, &sc->oldmask, err);
  PUT_USER_FIELD(current->fault_address, &sc->cr2, err);
  PUT_USER_FIELD((uint64_t)0, &sc->fpstate, err);
  return err;
}

static int restore_sigcontext(struct pt_regs *regs, const struct sigcontext *sc) {
  int err = 0;
  uint64_t flags;
#define RESTORE_REG(name) GET_USER_FIELD(regs->name, &sc->name, err);
  SIGCONTEXT_REGS(RESTORE_REG)
#undef RESTORE_REG
  GET_USER_FIELD(flags, &sc->eflags, err);
  regs->rflags = (regs->rflags & ~FIX_EFLAGS) | (flags & FIX_EFLAGS);
  return err;
}

static int setup_rt_frame(struct ksignal *ksig, sigset_t saved_mask, struct pt_regs *regs) {
  uint64_t sp = regs->rsp - REDZONE - sizeof(struct rt_sigframe);
  sp = (sp & ~15ull) - 8; /* as after a call: (rsp + 8) is 16-byte aligned */
  struct rt_sigframe *frame = (struct rt_sigframe *)sp;
  if (!access_ok(sp, sizeof(*frame))) return -EFAULT;
  /* x86-64 has no stack trampoline: the C library's restorer is required. */
  if (!(ksig->action.flags & SA_RESTORER)) return -EFAULT;

  int err = 0;
  if (ksig->action.flags & SA_SIGINFO) err = copy_siginfo_to_user(&frame->info, ksig->info);
  PUT_USER_FIELD((uint64_t)0, &frame->uc.uc_flags, err);
  PUT_USER_FIELD((uint64_t)0, (uint64_t *)&frame->uc.uc_link, err);
  PUT_USER_FIELD((uint64_t)0, &frame->uc.uc_stack.ss_sp, err);
  PUT_USER_FIELD(SS_DISABLE, &frame->uc.uc_stack.ss_flags, err);
  PUT_USER_FIELD((uint64_t)0, &frame->uc.uc_stack.ss_size, err);
  err |= setup_sigcontext(&frame->uc.uc_mcontext, regs, saved_mask);
  PUT_USER_FIELD(saved_mask, &frame->uc.uc_sigmask, err);
  PUT_USER_FIELD((uint64_t)ksig->action.restorer, &frame->pretcode, err);
  if (err) return -EFAULT;

  regs->rdi = (uint64_t)ksig->signo;
  regs->rsi = (uint64_t)&frame->info;
  regs->rdx = (uint64_t)&frame->uc;
  regs->rax = 0;
  regs->rsp = sp;
  regs->rip = (uint64_t)ksig->action.handler;
  regs->rflags &= ~HANDLER_CLEARS_EFLAGS;
  return 0;
}

#if CONFIG_SIGNAL_PV
/*
 * signal=pv: the VMM writes the frame and sets the handler's registers with one
 * hypercall (pv_signal.h); where it declines, or no VMM answers, the kernel writes it
 * here as every other build does.
 */
static int write_rt_frame(struct ksignal *ksig, sigset_t saved_mask, struct pt_regs *regs) {
  const int answer = pv_signal_frame(ksig, saved_mask, regs);
  if (answer == SIGVISOR_SIGNAL_PV_DONE) return 0;
  const int err = setup_rt_frame(ksig, saved_mask, regs);
  if (answer == SIGVISOR_SIGNAL_PV_CHECK) pv_signal_frame_built(err);
  return err;
}
#else
/* (A macro, so that the other builds' code and its inlining are as they always were.) */
#define write_rt_frame setup_rt_frame
#endif

static void handle_signal(struct ksignal *ksig, struct pt_regs *regs) {
  if (write_rt_frame(ksig, signal_mask_to_save(), regs) < 0) {
    signal_failed(ksig);
    force_sigsegv(ksig->signo);
    return;
  }
  signal_delivered(ksig);
}

void exit_to_user_mode(struct pt_regs *regs) {
  struct task *self = current;
  struct ksignal ksig;
  while (signal_pending(self) && get_signal(&ksig)) {
    /*
     * Seed 000. Re-arm the task's breakpoints before its handler runs: they may
     * have been cleared if one triggered inside the kernel. Baseline: always,
     * though `mov %dr7` serialises the CPU (and traps under some hypervisors).
     * CONFIG_DR7_LAZY: only when the task has one enabled.
     */
#if CONFIG_DR7_LAZY
    if (unlikely(self->debugreg[7]))
#endif
      set_debugreg7(self->debugreg[7]);
    handle_signal(&ksig, regs);
  }
  restore_saved_sigmask();
}

/* Reads the handler's frame back: `mask` and the saved registers into regs; true for
 * a bad frame. The handler's `ret` popped pretcode: the frame starts 8 bytes below
 * rsp. (A macro, so that the builds without signal=pv compile it as they always have.) */
#define RT_FRAME_BAD(regs, mask)                                                      \
  ({                                                                                  \
    const struct rt_sigframe *frame_ = (const struct rt_sigframe *)((regs)->rsp - 8); \
    !access_ok((uint64_t)frame_, sizeof(*frame_)) ||                                  \
        __get_user((mask), &frame_->uc.uc_sigmask) ||                                 \
        restore_sigcontext((regs), &frame_->uc.uc_mcontext);                          \
  })

#if CONFIG_SIGNAL_PV
/* signal=pv: the VMM reads the frame back into regs and hands over the mask; where
 * it declines, or no VMM answers, the kernel reads it here. */
int64_t sys_rt_sigreturn(struct pt_regs *regs) {
  sigset_t mask;
  const int answer = pv_sigreturn(regs, &mask);
  if (answer != SIGVISOR_SIGNAL_PV_DONE) {
    const int bad = RT_FRAME_BAD(regs, mask);
    if (answer == SIGVISOR_SIGNAL_PV_CHECK) pv_sigreturn_built(mask, bad ? -EFAULT : 0);
    if (bad) {
      force_sigsegv(0);
      return (int64_t)regs->rax;
    }
  }
  set_blocked(mask);
  return (int64_t)regs->rax; /* the interrupted code's rax, not a result */
}
#else
int64_t sys_rt_sigreturn(struct pt_regs *regs) {
  sigset_t mask;
  if (RT_FRAME_BAD(regs, mask)) {
    force_sigsegv(0);
    return (int64_t)regs->rax;
  }
  set_blocked(mask);
  return (int64_t)regs->rax; /* the interrupted code's rax, not a result */
}
#endif
