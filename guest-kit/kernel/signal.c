/*
 * Signals: the generic core.
 *
 * Each task has a pending bitmap and a queue of struct sigqueue entries carrying the
 * siginfo. Classic signals (below SIGRTMIN) are queued at most once; real-time ones
 * once per send. Dequeue takes synchronous (fault) signals first, then the lowest
 * number, as Linux's next_signal() does. Seed 003 is in dequeue_signal().
 */
#include "guest-kit/kernel/signal.h"

#include "asm/bitops.h"
#include "asm/uaccess.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "guest-kit/kernel/config.h"
#include "guest-kit/kernel/inject.h"
#include "guest-kit/kernel/kernel.h"
#if CONFIG_SMP
#include "guest-kit/kernel/smp.h"
#endif
#include "guest-kit/kernel/task.h"
#include "guest-kit/lib/string.h"
#include "guest-kit/uapi/syscalls.h"

#define SYNCHRONOUS_MASK \
  (sigmask(SIGSEGV) | sigmask(SIGBUS) | sigmask(SIGILL) | sigmask(SIGTRAP) | sigmask(SIGFPE) | \
   sigmask(SIGSYS))
#define UNBLOCKABLE_MASK (sigmask(SIGKILL) | sigmask(SIGSTOP))
#define DEFAULT_IGNORE_MASK \
  (sigmask(SIGCHLD) | sigmask(SIGCONT) | sigmask(SIGURG) | sigmask(SIGWINCH))

/* A fixed pool of queue entries, handed out from a free list (a slab in spirit). */
#define SIGQUEUE_POOL_SIZE 64
static struct sigqueue sigqueue_pool[SIGQUEUE_POOL_SIZE];
static int sigqueue_pool_used;
static struct sigqueue *sigqueue_free_list;

static struct sigqueue *sigqueue_alloc(void) {
  struct sigqueue *q = sigqueue_free_list;
  if (q) {
    sigqueue_free_list = q->next;
  } else if (sigqueue_pool_used < SIGQUEUE_POOL_SIZE) {
    q = &sigqueue_pool[sigqueue_pool_used++];
  } else {
    return 0;
  }
  q->next = 0;
  return q;
}

static void sigqueue_free(struct sigqueue *q) {
  q->next = sigqueue_free_list;
  sigqueue_free_list = q;
}

int signal_pending(const struct task *task) { return signal_pending_set(&task->signal); }

static int valid_signal(int signo) { return signo >= 1 && signo <= NSIG; }

static const char *signal_name(int signo) {
  static const char *const names[] = {
      [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
      [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT", [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
      [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
      [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
  };
  return signo < (int)ARRAY_SIZE(names) && names[signo] ? names[signo] : "signal";
}

static int sig_ignored(const struct task *task, int signo) {
  const void *handler = task->signal.action[signo - 1].handler;
  if (handler == SIG_IGN) return 1;
  return handler == SIG_DFL && (DEFAULT_IGNORE_MASK & sigmask(signo));
}

int send_signal(struct task *task, const siginfo_t *info) {
  struct signal_state *s = &task->signal;
  const int signo = info->si_signo;
  const sigset_t bit = sigmask(signo);
  /* An ignored signal is dropped at once, unless blocked: the handler may change
   * before it is unblocked. */
  if (sig_ignored(task, signo) && !(s->blocked & bit)) return 0;
  if (signo < SIGRTMIN && (s->pending.signal & bit)) return 0; /* already pending */
  struct sigqueue *q = sigqueue_alloc();
  if (q) {
    q->info = *info;
    struct sigqueue **tail = &s->pending.head;
    while (*tail) tail = &(*tail)->next;
    *tail = q;
  } else if (signo >= SIGRTMIN) {
    return -EAGAIN; /* real-time signals must carry their siginfo */
  }
  s->pending.signal |= bit;
  if (!(s->blocked & bit)) signal_wake_up(task);
#if CONFIG_SMP
  else kick_process(task); /* a blocked signal kicks a running task too: smp.h says why */
#endif
  return 0;
}

static void init_siginfo(siginfo_t *info, int signo, int code) {
  memset(info, 0, sizeof(*info));
  info->si_signo = signo;
  info->si_code = code;
}

void send_signal_from_kernel(struct task *task, int signo, int pid) {
  siginfo_t info;
  init_siginfo(&info, signo, SI_KERNEL);
  info.si_pid = pid;
  send_signal(task, &info);
}

void force_sig_fault(int signo, int code, uint64_t addr) {
  struct task *self = current;
  struct k_sigaction *action = &self->signal.action[signo - 1];
  /* Linux's force_sig_info: a fault must not be lost to a mask or SIG_IGN. */
  if (action->handler == SIG_IGN) action->handler = SIG_DFL;
  self->signal.blocked &= ~sigmask(signo);
  siginfo_t info;
  init_siginfo(&info, signo, code);
  info.si_addr = addr;
  send_signal(self, &info);
}

void force_sigsegv(int signo) {
  if (signo == SIGSEGV) current->signal.action[SIGSEGV - 1].handler = SIG_DFL;
  force_sig_fault(SIGSEGV, SI_KERNEL, 0);
}

static int next_signal(sigset_t pending, sigset_t blocked) {
  sigset_t candidates = pending & ~blocked;
  if (!candidates) return 0;
  if (candidates & SYNCHRONOUS_MASK) candidates &= SYNCHRONOUS_MASK;
  return (int)__ffs64(candidates) + 1;
}

/* Unlinks the first queue entry of `signo`, clearing its pending bit unless another
 * entry for it remains. NULL when the signal was pending without an entry (the pool
 * was empty when it was sent). */
static struct sigqueue *collect_signal(struct sigpending *pending, int signo) {
  struct sigqueue *found = 0;
  int more = 0;
  for (struct sigqueue **link = &pending->head; *link;) {
    struct sigqueue *q = *link;
    if (q->info.si_signo == signo) {
      if (found) {
        more = 1;
        break;
      }
      found = q;
      *link = q->next;
      continue;
    }
    link = &q->next;
  }
  if (!more) pending->signal &= ~sigmask(signo);
  return found;
}

/* The siginfo of a signal that had no queue entry (the pool was empty when it was
 * sent). One static buffer is enough: it is consumed before the next dequeue. */
static siginfo_t *minimal_siginfo(siginfo_t *info, int signo) {
  init_siginfo(info, signo, SI_USER);
  return info;
}

/*
 * Seed 003. Baseline: dequeue copies the entry's siginfo into the caller's buffer
 * and frees the entry at once. CONFIG_DEQUEUE_POINTER: it hands the entry itself to
 * the caller, which points the frame set-up at it and frees it after delivery.
 */
static int dequeue_signal(struct task *task, struct ksignal *ksig) {
  struct signal_state *s = &task->signal;
  int signo = next_signal(s->pending.signal, s->blocked);
  if (!signo) return 0;
  struct sigqueue *q = collect_signal(&s->pending, signo);
#if CONFIG_DEQUEUE_POINTER
  static siginfo_t no_entry_info;
  ksig->queued = q;
  ksig->info = q ? &q->info : minimal_siginfo(&no_entry_info, signo);
#else
  if (q) {
    memcpy(&ksig->info_storage, &q->info, siginfo_copy_size(&q->info));
    sigqueue_free(q);
  } else {
    minimal_siginfo(&ksig->info_storage, signo);
  }
  ksig->info = &ksig->info_storage;
#endif
  ksig->signo = signo;
  return signo;
}

static void release_dequeued(struct ksignal *ksig) {
#if CONFIG_DEQUEUE_POINTER
  if (ksig->queued) sigqueue_free(ksig->queued);
  ksig->queued = 0;
#else
  (void)ksig;
#endif
}

int get_signal(struct ksignal *ksig) {
  struct task *self = current;
  for (;;) {
    int signo = dequeue_signal(self, ksig);
    if (!signo) return 0;
    struct k_sigaction *action = &self->signal.action[signo - 1];
    if (action->handler == SIG_IGN) {
      release_dequeued(ksig);
      continue;
    }
    if (action->handler != SIG_DFL) {
      ksig->action = *action;
      if (action->flags & SA_RESETHAND) action->handler = SIG_DFL;
      return signo;
    }
    if (DEFAULT_IGNORE_MASK & sigmask(signo)) {
      release_dequeued(ksig);
      continue;
    }
    /* The default action: terminate (wait status = the signal), said on the console
     * as Linux's show_unhandled_signals does. */
    INJECT_REPORT(SIGVISOR_EVENT_TASK_KILLED, signo, ksig->info->si_code, self->pid,
                  ksig->info->si_addr, 0);
    release_dequeued(ksig);
    printk("%s[%d]: killed by signal %d (%s)\n", self->name, self->pid, signo,
           signal_name(signo));
    task_exit(signo);
  }
}

void signal_delivered(struct ksignal *ksig) {
  struct signal_state *s = &current->signal;
  INJECT_REPORT(SIGVISOR_EVENT_SIGNAL_DELIVERED, ksig->signo, ksig->info->si_code, current->pid,
                ksig->info->si_addr, 0);
  sigset_t block = ksig->action.mask;
  if (!(ksig->action.flags & SA_NODEFER)) block |= sigmask(ksig->signo);
  set_blocked(s->blocked | block);
  s->restore_blocked = 0; /* the frame saved sigsuspend's mask; sigreturn restores it */
  release_dequeued(ksig);
}

void signal_failed(struct ksignal *ksig) { release_dequeued(ksig); }

sigset_t signal_mask_to_save(void) {
  const struct signal_state *s = &current->signal;
  return s->restore_blocked ? s->saved_blocked : s->blocked;
}

void restore_saved_sigmask(void) {
  struct signal_state *s = &current->signal;
  if (!s->restore_blocked) return;
  s->restore_blocked = 0;
  set_blocked(s->saved_blocked);
}

void set_blocked(sigset_t mask) { current->signal.blocked = mask & ~UNBLOCKABLE_MASK; }

/* Drops every pending instance of `signo` (its action became "ignore"). */
static void flush_signal(struct task *task, int signo) {
  struct sigpending *pending = &task->signal.pending;
  struct sigqueue *q;
  while ((q = collect_signal(pending, signo)) != 0) sigqueue_free(q);
  pending->signal &= ~sigmask(signo);
}

int64_t sys_kill(int pid, int signo) {
  if (signo < 0 || signo > NSIG) return -EINVAL;
  if (pid <= 0) return -EINVAL; /* process groups are not implemented */
  struct task *target = task_find(pid);
  if (!target) return -ESRCH;
  if (signo == 0) return 0;
  siginfo_t info;
  init_siginfo(&info, signo, SI_USER);
  info.si_pid = current->pid;
  return send_signal(target, &info);
}

int64_t sys_rt_sigaction(int signo, uint64_t act, uint64_t oldact, uint64_t setsize) {
  if (setsize != sizeof(sigset_t) || !valid_signal(signo)) return -EINVAL;
  struct task *self = current;
  struct k_sigaction *k = &self->signal.action[signo - 1];
  if (oldact) {
    struct sigaction *u = (struct sigaction *)(uintptr_t)oldact;
    if (!access_ok(oldact, sizeof(*u))) return -EFAULT;
    int err = 0;
    err |= __put_user((uint64_t)(uintptr_t)k->handler, (uint64_t *)&u->sa_handler);
    err |= __put_user(k->flags, &u->sa_flags);
    err |= __put_user((uint64_t)(uintptr_t)k->restorer, (uint64_t *)&u->sa_restorer);
    err |= __put_user(k->mask, &u->sa_mask);
    if (err) return -EFAULT;
  }
  if (!act) return 0;
  if (sigmask(signo) & UNBLOCKABLE_MASK) return -EINVAL;
  const struct sigaction *u = (const struct sigaction *)(uintptr_t)act;
  if (!access_ok(act, sizeof(*u))) return -EFAULT;
  struct k_sigaction next;
  uint64_t handler, restorer;
  int err = 0;
  err |= __get_user(handler, (const uint64_t *)&u->sa_handler);
  err |= __get_user(next.flags, &u->sa_flags);
  err |= __get_user(restorer, (const uint64_t *)&u->sa_restorer);
  err |= __get_user(next.mask, &u->sa_mask);
  if (err) return -EFAULT;
  next.handler = (void *)(uintptr_t)handler;
  next.restorer = (void (*)(void))(uintptr_t)restorer;
  next.mask &= ~UNBLOCKABLE_MASK;
  *k = next;
  if (sig_ignored(self, signo)) flush_signal(self, signo);
  return 0;
}

int64_t sys_rt_sigprocmask(int how, uint64_t set, uint64_t oldset, uint64_t setsize) {
  if (setsize != sizeof(sigset_t)) return -EINVAL;
  struct signal_state *s = &current->signal;
  sigset_t old = s->blocked;
  if (set) {
    sigset_t mask;
    if (get_user(mask, (const sigset_t *)(uintptr_t)set)) return -EFAULT;
    switch (how) {
      case SIG_BLOCK: set_blocked(old | mask); break;
      case SIG_UNBLOCK: set_blocked(old & ~mask); break;
      case SIG_SETMASK: set_blocked(mask); break;
      default: return -EINVAL;
    }
  }
  if (oldset && put_user(old, (sigset_t *)(uintptr_t)oldset)) return -EFAULT;
  return 0;
}

/* Sleeps until a signal is pending; the caller returns -EINTR and the return to user
 * mode delivers it. */
static int64_t wait_for_signal(void) {
  struct task *self = current;
  while (!signal_pending(self)) sleep_on(&self->signal);
  return -EINTR;
}

int64_t sys_rt_sigsuspend(uint64_t mask, uint64_t setsize) {
  if (setsize != sizeof(sigset_t)) return -EINVAL;
  sigset_t temporary;
  if (get_user(temporary, (const sigset_t *)(uintptr_t)mask)) return -EFAULT;
  struct signal_state *s = &current->signal;
  s->saved_blocked = s->blocked;
  s->restore_blocked = 1;
  set_blocked(temporary);
  return wait_for_signal();
}

int64_t sys_pause(void) { return wait_for_signal(); }

int copy_siginfo_to_user(siginfo_t *to, const siginfo_t *from) {
  return copy_to_user(to, from, siginfo_copy_size(from)) ? -EFAULT : 0;
}
