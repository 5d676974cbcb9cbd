/* The generic signal core (arch-neutral). */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_H_
#define SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_H_

#include <stdint.h>

#include "arch/x86_64/guest/pt_regs.h"

/* A synchronous fault in the current task: signal `signo` caused by exception
 * `vector` at `addr` (the faulting address for #PF, else the instruction). */
void force_signal(struct pt_regs *regs, int signo, uint64_t vector, uint64_t addr);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_H_ */
