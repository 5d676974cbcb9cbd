/*
 * Several CPUs (smp=on, CONFIG_SMP; docs/guest-kernel.md, "Several CPUs"): the big
 * kernel lock and the rule for reschedule IPIs. Nothing here exists in the other
 * builds.
 */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_SMP_H_
#define SIGVISOR_GUEST_KIT_KERNEL_SMP_H_

#include "guest-kit/kernel/config.h"

#if CONFIG_SMP
#include "asm/smp.h"
#include "guest-kit/abi/sigvisor_abi.h"

struct task;

/* How many CPUs run this kernel: 1 until the APs are up, then the boot info's. */
extern int smp_num_cpus;

/*
 * One big kernel lock, Linux 2.0's design: taken on every kernel entry from user mode
 * (x86_trap) and released on the way back to user mode, so that only one CPU runs
 * kernel code at a time. The kernel runs with interrupts off (interrupt gates) and
 * so never nests it. schedule() keeps it across switch_to: it belongs to the CPU's
 * kernel path, not to a task; the idle loop drops it while it halts.
 *
 * Why no finer locks: what sigvisor measures here is IPIs and the exits they cost,
 * not lock contention; one lock keeps every existing path's logic (signals, pipes,
 * the scheduler) exactly as it is on one CPU.
 */
extern volatile int kernel_flag;

static inline void lock_kernel(void) {
  while (__atomic_exchange_n(&kernel_flag, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&kernel_flag, __ATOMIC_RELAXED)) cpu_relax();
}

static inline void unlock_kernel(void) { __atomic_store_n(&kernel_flag, 0, __ATOMIC_RELEASE); }

/*
 * The IPI rule (with the lock held):
 *   smp_wake_up_notify: `task` was just made runnable. If its CPU is another one and
 *     idle (halted), that CPU gets one reschedule IPI (a wake-up).
 *   kick_process: a signal was just queued for `task`. If `task` is the current task
 *     of another CPU (running, in user mode or on its way into the kernel), that CPU
 *     gets one IPI (a kick): it enters the kernel and its exit to user mode delivers
 *     the signal.
 * Nothing for a task of the sender's own CPU.
 *
 * Unlike Linux, whose complete_signal() kicks only a thread that wants the signal, a
 * running task is kicked even when it has the signal blocked: such a task is about to
 * unblock it (sigsuspend, rt_sigreturn), and whether it has yet depends on how far
 * its CPU got, which the host's scheduling decides. Kicking either way makes every
 * cross-CPU signal to a task pinned alone on its CPU cost exactly one IPI, asleep or
 * running, so the counts per op are exact; the kick it did not need costs the target
 * one interrupt and one kernel entry. docs/guest-kernel.md, "The IPI rule".
 */
void smp_wake_up_notify(struct task *task);
void kick_process(struct task *task);

/* Whether `task` is the current task of a CPU other than `cpu`. */
int task_running_elsewhere(const struct task *task, int cpu);

/*
 * The kernel's own count of its reschedule IPIs (struct sigvisor_ipi_counts): the rule
 * above counts each one it sends, for the sender and for the target. The phase markers
 * copy them to the VMM (hypercall.c).
 */
void smp_read_ipi_counts(struct sigvisor_ipi_counts *out);
#endif

#endif /* SIGVISOR_GUEST_KIT_KERNEL_SMP_H_ */
