/*
 * signal=pv (CONFIG_SIGNAL_PV): the rt frame written and read back by the VMM, one
 * hypercall each way (guest-kit/abi/sigvisor_abi.h, "Signal frames built by the
 * VMM"). The kernel hands over what only it knows (the signal, its action, the mask
 * the frame saves, where the task's registers and page tables are) and keeps every
 * decision: what to deliver, the masks, and what a bad frame means.
 *
 * One argument block per call, static: one CPU runs the kernel, and a hypercall
 * completes before its `out` retires. `outl` clobbers memory, so pt_regs and the
 * block are read again after the call. Where no VMM answers (QEMU), `result` keeps
 * the DECLINED the kernel put there.
 */
#include "arch/x86_64/guest/pv_signal.h"

#if CONFIG_SIGNAL_PV

#include "asm/hypercall.h"
#include "asm/page.h"
#include "guest-kit/kernel/signal.h"
#include "guest-kit/kernel/task.h"

static struct sigvisor_hc_signal_frame frame_args;
static struct sigvisor_hc_sigreturn sigreturn_args;

int pv_signal_frame(const struct ksignal *ksig, sigset_t saved_mask, struct pt_regs *regs) {
  struct sigvisor_hc_signal_frame *args = &frame_args;
  const struct task *self = current;
  args->regs_gpa = __pa(regs);
  args->page_table_gpa = __pa(self->page_table);
  args->info_gpa = __pa(ksig->info);
  args->info_bytes = siginfo_copy_size(ksig->info);
  args->handler = (uint64_t)ksig->action.handler;
  args->restorer = (uint64_t)ksig->action.restorer;
  args->action_flags = ksig->action.flags;
  args->saved_mask = saved_mask;
  args->fault_address = self->fault_address;
  args->signo = ksig->signo;
  args->phase = SIGVISOR_SIGNAL_PV_ASK;
  args->result = SIGVISOR_SIGNAL_PV_DECLINED;
  arch_hypercall(SIGVISOR_HC_SIGNAL_FRAME, args);
  return args->result;
}

void pv_signal_frame_built(int err) {
  frame_args.phase = SIGVISOR_SIGNAL_PV_BUILT;
  frame_args.kernel_result = err;
  arch_hypercall(SIGVISOR_HC_SIGNAL_FRAME, &frame_args);
}

int pv_sigreturn(struct pt_regs *regs, sigset_t *mask) {
  struct sigvisor_hc_sigreturn *args = &sigreturn_args;
  args->regs_gpa = __pa(regs);
  args->page_table_gpa = __pa(current->page_table);
  args->phase = SIGVISOR_SIGNAL_PV_ASK;
  args->result = SIGVISOR_SIGNAL_PV_DECLINED;
  arch_hypercall(SIGVISOR_HC_SIGRETURN, args);
  *mask = args->mask;
  return args->result;
}

void pv_sigreturn_built(sigset_t mask, int err) {
  sigreturn_args.phase = SIGVISOR_SIGNAL_PV_BUILT;
  sigreturn_args.mask = mask;
  sigreturn_args.kernel_result = err;
  arch_hypercall(SIGVISOR_HC_SIGRETURN, &sigreturn_args);
}

#endif /* CONFIG_SIGNAL_PV */
