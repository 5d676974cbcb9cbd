/*
 * signal=pv (CONFIG_SIGNAL_PV): the VMM builds and reads back the rt frame
 * (guest-kit/abi/sigvisor_abi.h, "Signal frames built by the VMM"). The frame code
 * (signal.c) asks first and writes the frame itself only where the VMM declines.
 */
#ifndef SIGVISOR_ARCH_X86_64_GUEST_PV_SIGNAL_H_
#define SIGVISOR_ARCH_X86_64_GUEST_PV_SIGNAL_H_

#include "arch/x86_64/guest/pt_regs.h"
#include "guest-kit/kernel/signal_types.h"

/* Asks the VMM to write `ksig`'s frame and set `regs` for the handler. Returns
 * SIGVISOR_SIGNAL_PV_DONE, _DECLINED (the kernel writes it), or _CHECK (the kernel
 * writes it, then reports with pv_signal_frame_built()). */
int pv_signal_frame(const struct ksignal *ksig, sigset_t saved_mask, struct pt_regs *regs);
/* After a _CHECK: the kernel's frame is written (`err`: its setup_rt_frame's return). */
void pv_signal_frame_built(int err);

/* Asks the VMM to restore `regs` from the frame below the user rsp and to hand back
 * the frame's mask in `*mask`. Returns as pv_signal_frame() does. */
int pv_sigreturn(struct pt_regs *regs, sigset_t *mask);
/* After a _CHECK: the kernel restored regs itself, read `mask`, and returned `err`. */
void pv_sigreturn_built(sigset_t mask, int err);

#endif /* SIGVISOR_ARCH_X86_64_GUEST_PV_SIGNAL_H_ */
