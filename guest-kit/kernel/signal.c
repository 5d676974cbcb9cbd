/*
 * Signals. So far only the default action of a synchronous fault signal exists:
 * the task is terminated and reports 128 + the signal number, as a shell shows it.
 * Handlers, the pending queue and frames come with the signal-path work.
 */
#include "guest-kit/kernel/signal.h"

#include "guest-kit/kernel/kernel.h"
#include "guest-kit/kernel/task.h"

static const char *signal_name(int signo) {
  switch (signo) {
    case 4: return "SIGILL";
    case 5: return "SIGTRAP";
    case 7: return "SIGBUS";
    case 8: return "SIGFPE";
    case 11: return "SIGSEGV";
    default: return "signal";
  }
}

void force_signal(struct pt_regs *regs, int signo, uint64_t vector, uint64_t addr) {
  printk("%s[%d]: killed by %s (vector %lu at rip %#lx, addr %#lx)\n", current->name,
         current->pid, signal_name(signo), vector, regs->rip, addr);
  task_exit(128 + signo);
}
