/*
 * The classic workloads on Linux, operation for operation the bundled kernel's
 * (guest-kit/user/workloads.c), so that the two kernels' phases compare:
 *   divzero      a real `divq` by zero, SIGFPE, the handler steps over it via its
 *                ucontext's rip
 *   lat_sig      sig_inst: rt_sigaction; sig_hndl: kill(getpid(), SIGUSR1), the
 *                handler runs
 *   sigpingpong  SIGUSR2/SIGUSR1 between a parent and its forked child, `ops` round trips
 *   xcpu_*       the same across CPUs: the parent pinned to CPU 0, the child to CPU 1
 *   pipe_rw      a 1-byte write then read on a pipe
 * Each makes `m->warmup` unmeasured operations first (at least one), so that the
 * measured ones take the same kernel path, then each measured phase `m->samples`
 * times (struct measure). Nothing here prints a time: the VMM measures the phases;
 * the lines printed are exact, so the programs' tests can check them whole.
 */
#include "guest-kit/linux/workloads.h"

#include "guest-kit/linux/lrt.h"
#include "guest-kit/linux/marker.h"

/* How often the running workload's handler ran. */
static volatile unsigned long handled;

static int check_handled(const char *what, const struct measure *m, unsigned long runs,
                         unsigned long sent) {
  if (runs == sent) {
    printf("%s: %lu x %lu ops, the handler ran %lu times\n", what, m->samples, m->ops, runs);
    return 0;
  }
  printf("%s: FAIL: the handler ran %lu times for %lu signals sent\n", what, runs, sent);
  return 1;
}

/* A real `divq %rcx` by zero (probes.S, shared with the self-test); it is 48 f7 f1:
 * the handler steps over its 3 bytes. */
void probe_divide(void);
#define DIV_INSN_BYTES 3

static void on_sigfpe(int sig, siginfo_t *info, void *context) {
  ((ucontext_t *)context)->uc_mcontext.rip += DIV_INSN_BYTES;
  handled++;
}

int linux_divzero(const struct measure *m) {
  sig_install(SIGFPE, (void *)on_sigfpe, SA_SIGINFO, 0);
  for (unsigned long i = 0; i < m->warmup; i++) probe_divide();
  handled = 0;
  for (unsigned long s = 0; s < m->samples; s++) {
    phase_begin("divzero", m->ops, SYS_rt_sigreturn, s);
    for (unsigned long i = 0; i < m->ops; i++) probe_divide();
    phase_end();
  }
  return check_handled("divzero", m, handled, m->ops * m->samples);
}

static void on_signal(int sig) { handled++; }

int linux_lat_sig(const struct measure *m) {
  for (unsigned long i = 0; i < m->warmup; i++) sig_install(SIGUSR1, (void *)on_signal, 0, 0);
  handled = 0;
  for (unsigned long s = 0; s < m->samples; s++) {
    phase_begin("sig_inst", m->ops, SYS_rt_sigaction, s);
    for (unsigned long i = 0; i < m->ops; i++) sig_install(SIGUSR1, (void *)on_signal, 0, 0);
    phase_end();
  }
  int failed = check_handled("lat_sig sig_inst", m, handled, 0);

  const int self = (int)sys_getpid();
  for (unsigned long i = 0; i < m->warmup; i++) sys_kill(self, SIGUSR1);
  handled = 0;
  for (unsigned long s = 0; s < m->samples; s++) {
    phase_begin("sig_hndl", m->ops, SYS_kill, s);
    for (unsigned long i = 0; i < m->ops; i++) sys_kill(self, SIGUSR1);
    phase_end();
  }
  failed |= check_handled("lat_sig sig_hndl", m, handled, m->ops * m->samples);
  return failed;
}

/*
 * sigpingpong: the parent sends SIGUSR2, the child answers SIGUSR1; each waits in
 * rt_sigsuspend with its signal blocked otherwise, so none is lost or doubled. The
 * child first says it is ready (one SIGUSR1); after the phase the parent says it is
 * done (one more SIGUSR2), so the last round costs what every other round does.
 */
static int pong(int parent, unsigned long rounds) {
  const sigset_t wait_mask = 0;
  sys_kill(parent, SIGUSR1); /* ready */
  for (unsigned long i = 0; i < rounds; i++) {
    sys_sigsuspend(&wait_mask);
    sys_kill(parent, SIGUSR1);
  }
  sys_sigsuspend(&wait_mask); /* done */
  return handled == rounds + 1 ? 0 : 1;
}

/*
 * Across CPUs (--vcpus 2 or more): the parent on CPU 0, a child alone on CPU 1, each
 * pinned with sched_setaffinity. Per op the parent sends `sig` and waits in
 * rt_sigsuspend for the child's `answer`: two cross-CPU signals.
 *   xcpu_pingpong  sigpingpong's round trip (the child is its pong)
 *   xcpu_kick      the child spins in user mode; its SIGUSR1 handler answers SIGUSR2
 *   xcpu_wake      the child sleeps in rt_sigsuspend; its SIGUSR1 handler answers
 * The parent pins itself to CPU 0 before its phase markers (the VMM takes markers
 * from vCPU 0 only); the child pins itself to CPU 1 right after the fork, before it
 * says it is ready, so the first op already crosses.
 */
static unsigned long xcpu_rounds;
static int xcpu_peer;

static void on_xcpu_ping(int sig) {
  if (++handled <= xcpu_rounds) sys_kill(xcpu_peer, SIGUSR2); /* not the last, "done" */
}

static int xcpu_child(int parent, unsigned long rounds, int sleeps) {
  xcpu_peer = parent;
  xcpu_rounds = rounds;
  sig_install(SIGUSR1, (void *)on_xcpu_ping, 0, 0);
  /* The mask inherited blocks both signals: a sleeper keeps SIGUSR1 blocked outside
   * rt_sigsuspend, a spinner takes it in user mode. */
  const sigset_t mask = sleeps ? sigmask(SIGUSR1) : 0, wait_mask = 0;
  sys_sigprocmask(SIG_SETMASK, &mask, 0);
  sys_kill(parent, SIGUSR2); /* ready */
  /* Until "done", the signal after the last round: handled then passes the rounds. */
  while (handled <= rounds)
    if (sleeps) sys_sigsuspend(&wait_mask);
  return handled == rounds + 1 ? 0 : 1;
}

enum child_role { ROLE_PONG, ROLE_SPIN, ROLE_SLEEP };

/* The parent side: `ops` round trips per sample, each `sig` to the child and its
 * `answer` back. `cross_cpu`: this process on CPU 0, the child on CPU 1. */
static int round_trips(const struct measure *m, const char *name, enum child_role role, int sig,
                       int answer, int cross_cpu) {
  const unsigned long ops = m->ops * m->samples;
  /* CPU 1 tried first: where it cannot be had, nothing has moved. */
  if (cross_cpu && (sys_pin_to_cpu(1) < 0 || sys_pin_to_cpu(0) < 0)) {
    printf("%s: needs --vcpus 2 or more\n", name);
    return 1;
  }
  /* Both signals blocked before the fork: the child inherits the mask (and the pong
   * its handler), and neither can lose a signal that arrives before it waits. */
  const sigset_t block = sigmask(sig) | sigmask(answer), wait_mask = 0;
  sys_sigprocmask(SIG_BLOCK, &block, 0);
  sig_install(answer, (void *)on_signal, 0, 0);
  if (role == ROLE_PONG) sig_install(sig, (void *)on_signal, 0, 0);
  handled = 0;
  const int parent = (int)sys_getpid();
  const long child = sys_fork();
  if (child < 0) {
    printf("%s: fork failed: %ld\n", name, child);
    return 1;
  }
  if (child == 0) {
    const int moved = !cross_cpu || sys_pin_to_cpu(1) == 0;
    const unsigned long rounds = ops + m->warmup; /* + the warm-up rounds */
    const int failed =
        role == ROLE_PONG ? pong(parent, rounds) : xcpu_child(parent, rounds, role == ROLE_SLEEP);
    sys_exit(failed | !moved);
  }
  sys_sigsuspend(&wait_mask); /* the child's "ready" */
  for (unsigned long i = 0; i < m->warmup; i++) { /* warm-up round trips */
    sys_kill((int)child, sig);
    sys_sigsuspend(&wait_mask);
  }
  handled = 0;
  for (unsigned long s = 0; s < m->samples; s++) {
    phase_begin(name, m->ops, SYS_kill, s);
    for (unsigned long i = 0; i < m->ops; i++) {
      sys_kill((int)child, sig);
      sys_sigsuspend(&wait_mask);
    }
    phase_end();
  }
  int failed = check_handled(name, m, handled, ops);
  sys_kill((int)child, sig); /* done */
  int status = -1;
  sys_wait((int)child, &status);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("%s: FAIL: the child ended with wait status %#x\n", name, status);
    failed = 1;
  }
  sys_sigprocmask(SIG_UNBLOCK, &block, 0);
  return failed;
}

int linux_sigpingpong(const struct measure *m) {
  return round_trips(m, "sigpingpong", ROLE_PONG, SIGUSR2, SIGUSR1, 0);
}

int linux_xcpu_pingpong(const struct measure *m) {
  return round_trips(m, "xcpu_pingpong", ROLE_PONG, SIGUSR2, SIGUSR1, 1);
}

int linux_xcpu_kick(const struct measure *m) {
  return round_trips(m, "xcpu_kick", ROLE_SPIN, SIGUSR1, SIGUSR2, 1);
}

int linux_xcpu_wake(const struct measure *m) {
  return round_trips(m, "xcpu_wake", ROLE_SLEEP, SIGUSR1, SIGUSR2, 1);
}

int linux_pipe_rw(const struct measure *m) {
  const unsigned long ops = m->ops * m->samples;
  int fds[2];
  if (sys_pipe(fds) < 0) return 1;
  char c = 'x';
  for (unsigned long i = 0; i < m->warmup; i++) {
    sys_write(fds[1], &c, 1);
    sys_read(fds[0], &c, 1);
  }
  unsigned long moved = 0;
  for (unsigned long s = 0; s < m->samples; s++) {
    phase_begin("pipe_rw", m->ops, SYS_write, s);
    for (unsigned long i = 0; i < m->ops; i++) {
      sys_write(fds[1], &c, 1);
      moved += (unsigned long)sys_read(fds[0], &c, 1);
    }
    phase_end();
  }
  sys_close(fds[0]);
  sys_close(fds[1]);
  if (moved != ops) {
    printf("pipe_rw: FAIL: %lu bytes read back for %lu written\n", moved, ops);
    return 1;
  }
  printf("pipe_rw: %lu x %lu ops, %lu bytes through the pipe\n", m->samples, m->ops, moved);
  return 0;
}
