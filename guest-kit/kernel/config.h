/*
 * The guest kernel's build configuration: one switch per seed change, as Kconfig
 * would have it. A variant image sets them with -D; the defaults here are the
 * 2004-era baseline. Each switch is read in exactly one place per arch, where Linux
 * made the change (guest-kit/build/variants.bzl lists which switches each arch's
 * images vary):
 *
 *   CONFIG_DR7_LAZY         seed 000  arch/x86_64/guest/signal.c    do_signal()
 *   CONFIG_PDA_DIRECT       seed 001  arch/x86_64/guest/percpu.h     this_cpu_*()
 *                                     arch/x86_64/guest/entry.S      SWAPGS_IF_USER
 *   CONFIG_UACCESS_CERR     seed 002  arch/x86_64/guest/signal.c    setup/restore_sigcontext()
 *                                     arch/mips/guest/signal.c      setup/restore_sigcontext()
 *   CONFIG_DEQUEUE_POINTER  seed 003  guest-kit/kernel/signal.c     dequeue_signal()
 *   CONFIG_TRAMP_VDSO       seed 004  arch/mips/guest/signal.c      setup_rt_frame()
 *
 * And settings that are no seed's change (variants.bzl's SETTINGS): how the kernel
 * reaches the VMM.
 *
 *   CONFIG_DEBUGREG_PV      --trap=pv arch/x86_64/guest/debugreg.h    set_debugreg*()
 *                                     arch/x86_64/guest/percpu.c     wrmsr_segment_base()
 *   CONFIG_SIGNAL_PV        signal=pv arch/x86_64/guest/signal.c    write_rt_frame(),
 *                                                                   sys_rt_sigreturn()
 *
 * And one that is how many CPUs the kernel runs on (x86-64):
 *
 *   CONFIG_SMP              smp=on    guest-kit/kernel/task.c        schedule(), the wake-ups
 *                                     guest-kit/kernel/smp.c         the big kernel lock, IPIs
 *                                     arch/x86_64/guest/smp.c        AP bring-up
 *                                     arch/x86_64/guest/apic.c       the local APIC, IPIs
 *                                     arch/x86_64/guest/traps.c      x86_trap(): the lock
 *                                     arch/x86_64/guest/percpu.h     cpu_data[] per CPU
 */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_CONFIG_H_
#define SIGVISOR_GUEST_KIT_KERNEL_CONFIG_H_

/* Seed 000: write DR7 on every signal delivery (0), or only when the task has a
 * breakpoint enabled (1). */
#ifndef CONFIG_DR7_LAZY
#define CONFIG_DR7_LAZY 0
#endif

/* Seed 001: per-CPU data through %gs with the GS base swapped on every kernel entry
 * and exit (0), or a plain global structure on this uniprocessor kernel (1). */
#ifndef CONFIG_PDA_DIRECT
#define CONFIG_PDA_DIRECT 0
#endif

/* Seed 002: `err |= __put_user(x, p)` per field (0), or __put_user_cerr(x, p, err)
 * keeping the cumulative error in a register (1). */
#ifndef CONFIG_UACCESS_CERR
#define CONFIG_UACCESS_CERR 0
#endif

/* Seed 003: dequeue copies the siginfo out (0), or hands back the sigqueue entry,
 * freed after delivery (1). */
#ifndef CONFIG_DEQUEUE_POINTER
#define CONFIG_DEQUEUE_POINTER 0
#endif

/* Seed 004 (MIPS): the signal-return trampoline `li v0, SYS_rt_sigreturn; syscall`
 * written onto the user stack for every signal and flushed from the I-cache of
 * every core (0), or one read-only vdso page mapped into every process, with the
 * handler's ra pointed at it and nothing flushed (1). */
#ifndef CONFIG_TRAMP_VDSO
#define CONFIG_TRAMP_VDSO 0
#endif

/* Debug-register writes (DR0-3, DR6, DR7) as `mov %dbN` (0), or into the VMM's
 * paravirtual page with a hypercall only when the hardware must change (1; with no
 * page from the VMM, e.g. under --trap=off or QEMU, the same movs as 0). */
#ifndef CONFIG_DEBUGREG_PV
#define CONFIG_DEBUGREG_PV 0
#endif

/* Signal frames written by the kernel (0), or by the VMM with one hypercall each way
 * (1; the kernel writes them itself where the VMM declines or none answers, e.g.
 * QEMU). x86-64 only. */
#ifndef CONFIG_SIGNAL_PV
#define CONFIG_SIGNAL_PV 0
#endif

/* One CPU (0), or up to SIGVISOR_MAX_CPUS (1; x86-64): the machine's other vCPUs
 * brought up after the quiescent point, a run queue and an idle loop per CPU, one big
 * kernel lock, reschedule IPIs (docs/guest-kernel.md, "Several CPUs"). With 0 nothing
 * of it is compiled: every other build's code is instruction for instruction as
 * before. */
#ifndef CONFIG_SMP
#define CONFIG_SMP 0
#endif

/* Seed 001's shortcut reads one global structure as "this CPU's data": on several
 * CPUs there is no one such structure. Linux took the patch for uniprocessor kernels
 * only (`!CONFIG_SMP`: "i386-pda UP optimization"), SMP kernels kept %gs; so does
 * this kernel. */
#if CONFIG_SMP && CONFIG_PDA_DIRECT
#error "CONFIG_SMP=1 with CONFIG_PDA_DIRECT=1: Linux refused per-CPU data without %gs on SMP"
#endif

#endif /* SIGVISOR_GUEST_KIT_KERNEL_CONFIG_H_ */
