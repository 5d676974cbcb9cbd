/*
 * The generic signal core (Linux's kernel/signal.c in miniature): queueing,
 * dequeuing in priority order, the default actions and the signal system calls.
 * The frame on the user stack is the arch's (arch/<arch>/guest/signal.c).
 */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_H_
#define SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_H_

#include <stdint.h>

#include "guest-kit/kernel/signal_types.h"

struct task;

static inline int signal_pending_set(const struct signal_state *s) {
  return (s->pending.signal & ~s->blocked) != 0;
}
int signal_pending(const struct task *task);

/* Queues `info` for `task` (Linux's send_signal). */
int send_signal(struct task *task, const siginfo_t *info);
/* A kernel-generated signal (e.g. SIGCHLD) with si_pid. */
void send_signal_from_kernel(struct task *task, int signo, int pid);
/* A synchronous fault in the current task: it cannot be blocked or ignored away. */
void force_sig_fault(int signo, int code, uint64_t addr);
/* The frame for `signo` could not be written or read back: SIGSEGV. */
void force_sigsegv(int signo);

/* The next signal to deliver, with its action; 0 when none is left. Signals whose
 * action is to ignore are consumed here; one whose action is to terminate ends the
 * task. */
int get_signal(struct ksignal *ksig);
/* The frame is on the user stack: block the handler's mask, release the entry. */
void signal_delivered(struct ksignal *ksig);
/* The frame could not be written: release the entry (the caller forces SIGSEGV). */
void signal_failed(struct ksignal *ksig);
/* The mask the frame saves: sigsuspend's original mask if one is pending restore. */
sigset_t signal_mask_to_save(void);
/* After delivery, put back the mask sigsuspend replaced, if no handler took it. */
void restore_saved_sigmask(void);
/* Sets the blocked mask (SIGKILL and SIGSTOP stay unblockable). */
void set_blocked(sigset_t mask);

int64_t sys_kill(int pid, int signo);
int64_t sys_rt_sigaction(int signo, uint64_t act, uint64_t oldact, uint64_t setsize);
int64_t sys_rt_sigprocmask(int how, uint64_t set, uint64_t oldset, uint64_t setsize);
int64_t sys_rt_sigsuspend(uint64_t mask, uint64_t setsize);
int64_t sys_pause(void);

/* Linux copies the whole struct only for si_code < 0; otherwise the preamble and the
 * largest kernel union member (_sigchld: 32 bytes on x86-64). */
#define SIGINFO_KERNEL_BYTES (16 + 32)
static inline uint64_t siginfo_copy_size(const siginfo_t *info) {
  return info->si_code < 0 ? sizeof(siginfo_t) : SIGINFO_KERNEL_BYTES;
}

/* Copies `from` to the user siginfo at `to` as Linux's copy_siginfo_to_user does:
 * siginfo_copy_size() bytes, not all 128. */
int copy_siginfo_to_user(siginfo_t *to, const siginfo_t *from);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_H_ */
