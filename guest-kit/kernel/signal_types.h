/* The kernel's per-task signal state (generic; guest-kit/kernel/signal.c). */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_TYPES_H_
#define SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_TYPES_H_

#include <stdint.h>

#include "guest-kit/kernel/config.h"
#include "guest-kit/uapi/signal.h"

/* One queued signal with its siginfo (Linux's struct sigqueue). */
struct sigqueue {
  struct sigqueue *next;
  siginfo_t info;
};

/* Pending signals: a bitmap for the quick test and the queue with the siginfo. */
struct sigpending {
  sigset_t signal;
  struct sigqueue *head;
};

struct k_sigaction {
  void *handler;
  uint64_t flags;
  void (*restorer)(void);
  sigset_t mask;
};

struct signal_state {
  struct sigpending pending;
  sigset_t blocked;
  sigset_t saved_blocked;  /* sigsuspend's mask to restore after the handler */
  int restore_blocked;     /* saved_blocked is valid */
  struct k_sigaction action[NSIG];
};

/* A signal chosen for delivery: what get_signal() hands the arch code. `info`
 * points at the siginfo to copy to the frame: `info_storage` after a copying
 * dequeue, the queue entry itself (`queued`) after a pointer dequeue (seed 003). */
struct ksignal {
  int signo;
  struct k_sigaction action;
  siginfo_t *info;
#if CONFIG_DEQUEUE_POINTER
  struct sigqueue *queued; /* freed by signal_delivered() / signal_failed() */
#else
  siginfo_t info_storage; /* 128 bytes on the kernel stack, as in Linux before */
#endif
};

#endif /* SIGVISOR_GUEST_KIT_KERNEL_SIGNAL_TYPES_H_ */
