/*
 * x86_trap: where every exception and system call arrives (see entry.S).
 *
 * System calls use `int $0x80`. On hardware KVM that is a DPL3 gate to vector 0x80.
 * On a PVM host `INT n` (n != 3) from CPL3 raises #UD instead, and SYSCALL does not
 * raise privilege at all (docs/host-notes.md), so the #UD handler recognises the
 * `cd 80` bytes at the faulting RIP, steps over them and takes the same path: one
 * user-visible convention that works on both hosts.
 *
 * Any other exception from user mode becomes the signal Linux would send. In kernel
 * mode, a fault at a user access resumes at its fixup (uaccess.h); anything else is
 * a panic reported to the VMM.
 *
 * Fault injection (docs/inject.md) adds two cases, kept off the paths every trap
 * takes: the host-request interrupt (a signal sent from outside), and a #PF on a
 * page the host evicted, which is paged back in as demand paging would.
 */
#include "arch/x86_64/guest/paging.h"
#include "arch/x86_64/guest/pt_regs.h"
#include "arch/x86_64/guest/uaccess.h"
#include "arch/x86_64/guest/x86.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/inject.h"
#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/signal.h"
#include "guest-kit/kernel/syscall.h"
#include "guest-kit/kernel/task.h"
#include "guest-kit/uapi/signal.h"

#if CONFIG_SMP
#include "arch/x86_64/guest/apic.h"
#include "guest-kit/kernel/smp.h"
#endif

#define VECTOR_DE 0
#define VECTOR_DB 1
#define VECTOR_BP 3
#define VECTOR_UD 6
#define VECTOR_GP 13
#define VECTOR_PF 14
#define VECTOR_SYSCALL 0x80
#define PF_PROTECTION 1 /* error-code bit 0: the page was present */

void exit_to_user_mode(struct pt_regs *regs);

/* True when the user instruction at `rip` is `int $0x80` (cd 80). */
static int is_int80(uint64_t rip) {
  uint16_t bytes;
  return get_user(bytes, (const uint16_t *)rip) == 0 && bytes == 0x80cd;
}

/* A page fault on a page the host evicted is repaired here, from either mode, as
 * demand paging would: the faulting instruction then runs again. */
static int repaired_evicted_page(struct pt_regs *regs) {
  if (regs->error_code & PF_PROTECTION) return 0;
  const uint64_t address = read_cr2();
  if (!access_ok(address, 1) || !paging_repair_evicted(read_cr3(), address)) return 0;
  INJECT_REPORT(SIGVISOR_EVENT_PAGE_REPAIRED, 0, 0, current->pid, address, regs->rip);
  return 1;
}

/* The signal, si_code and si_addr Linux gives a user-mode exception. */
static void user_exception(struct pt_regs *regs) {
  switch (regs->vector) {
    case VECTOR_DE: force_sig_fault(SIGFPE, FPE_INTDIV, regs->rip); break;
    case VECTOR_DB: force_sig_fault(SIGTRAP, TRAP_TRACE, regs->rip); break;
    case VECTOR_BP: force_sig_fault(SIGTRAP, SI_KERNEL, 0); break;
    case VECTOR_UD: force_sig_fault(SIGILL, ILL_ILLOPN, regs->rip); break;
    case VECTOR_GP: force_sig_fault(SIGSEGV, SI_KERNEL, 0); break;
    case VECTOR_PF: {
      if (repaired_evicted_page(regs)) break;
      uint64_t address = read_cr2();
      current->fault_address = address;
      force_sig_fault(SIGSEGV, (regs->error_code & PF_PROTECTION) ? SEGV_ACCERR : SEGV_MAPERR,
                      address);
      break;
    }
    case SIGVISOR_HOST_REQUEST_VECTOR: host_request(); break; /* an interrupt, not a fault */
    default: force_sig_fault(SIGBUS, BUS_ADRERR, regs->rip); break;
  }
}

static void kernel_exception(struct pt_regs *regs) {
#if CONFIG_SMP
  /* Interrupts are on in the kernel only where the idle loop halts, without the lock:
   * a wake-up needs nothing but its EOI (the idle loop then looks at its run queue);
   * a host request takes the lock as a kernel entry does.
   * A wake-up that came at the `hlt` itself was delivered inside sti's shadow, which
   * the host did not honour: returning there would halt with the wake-up already
   * taken, for good (nothing else interrupts an idle CPU). It resumes past the `hlt`
   * instead. Seen in the hardware lane (QEMU's TCG under nested SVM); docs/smp.md. */
  if (regs->vector == RESCHEDULE_VECTOR) {
    if (regs->rip == (uint64_t)x86_idle_hlt) regs->rip += 1; /* hlt: one byte, f4 */
    apic_eoi();
    return;
  }
  if (regs->vector == SIGVISOR_HOST_REQUEST_VECTOR) {
    lock_kernel();
    host_request();
    unlock_kernel();
    return;
  }
#else
  if (regs->vector == SIGVISOR_HOST_REQUEST_VECTOR) {
    host_request();
    return;
  }
#endif
  if (regs->vector == VECTOR_PF && repaired_evicted_page(regs)) return;
  uint64_t fixup = search_exception_table(regs->rip);
  if (fixup) {
    regs->rip = fixup;
    return;
  }
  panic_at(regs->rip, regs->vector, "kernel exception %lu (error %#lx) at %#lx, cr2 %#lx",
           regs->vector, regs->error_code, regs->rip, read_cr2());
}

#if CONFIG_SMP
/* smp=on: every entry from user mode takes the big kernel lock (smp.h) and the return
 * to user mode drops it. A reschedule IPI from user mode is a kick: its EOI, then the
 * exit to user mode delivers the signal it was sent for. */
void x86_trap(struct pt_regs *regs) {
  if (!user_mode(regs)) {
    kernel_exception(regs);
    return;
  }
  if (regs->vector == RESCHEDULE_VECTOR) apic_eoi();
  lock_kernel();
  if (regs->vector == VECTOR_SYSCALL) {
    syscall_dispatch(regs);
  } else if (regs->vector == VECTOR_UD && is_int80(regs->rip)) {
    regs->rip += 2;
    syscall_dispatch(regs);
  } else if (regs->vector != RESCHEDULE_VECTOR) {
    user_exception(regs);
  }
  exit_to_user_mode(regs);
  unlock_kernel();
}

/* A spawned task's first return to user mode (entry.S, x86_ret_from_spawn): it was
 * switched to with the lock held. */
void x86_ret_from_spawn_unlock(struct pt_regs *regs) {
  exit_to_user_mode(regs);
  unlock_kernel();
}
#else
void x86_trap(struct pt_regs *regs) {
  if (!user_mode(regs)) {
    kernel_exception(regs);
    return;
  }
  if (regs->vector == VECTOR_SYSCALL) {
    syscall_dispatch(regs);
  } else if (regs->vector == VECTOR_UD && is_int80(regs->rip)) {
    regs->rip += 2;
    syscall_dispatch(regs);
  } else {
    user_exception(regs);
  }
  exit_to_user_mode(regs);
}
#endif
