/*
 * The four classic workloads on Linux, operation for operation the bundled kernel's
 * (guest-kit/user/workloads.c), so that the two kernels' phases compare:
 *   divzero      a real `divq` by zero, SIGFPE, the handler steps over it via its
 *                ucontext's rip
 *   lat_sig      sig_inst: rt_sigaction; sig_hndl: kill(getpid(), SIGUSR1), the
 *                handler runs
 *   sigpingpong  SIGUSR2/SIGUSR1 between a parent and its forked child, `ops` round trips
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

int linux_sigpingpong(const struct measure *m) {
  const unsigned long ops = m->ops * m->samples;
  /* Both signals blocked before the fork: the child inherits the mask and the
   * handler, and neither can lose a signal that arrives before it waits. */
  const sigset_t block = sigmask(SIGUSR1) | sigmask(SIGUSR2), wait_mask = 0;
  sys_sigprocmask(SIG_BLOCK, &block, 0);
  sig_install(SIGUSR1, (void *)on_signal, 0, 0);
  sig_install(SIGUSR2, (void *)on_signal, 0, 0);
  handled = 0;
  const int parent = (int)sys_getpid();
  const long child = sys_fork();
  if (child < 0) {
    printf("sigpingpong: fork failed: %ld\n", child);
    return 1;
  }
  if (child == 0) sys_exit(pong(parent, ops + m->warmup)); /* + the warm-up rounds */
  sys_sigsuspend(&wait_mask); /* the child's "ready" */
  for (unsigned long i = 0; i < m->warmup; i++) { /* warm-up round trips */
    sys_kill((int)child, SIGUSR2);
    sys_sigsuspend(&wait_mask);
  }
  handled = 0;
  for (unsigned long s = 0; s < m->samples; s++) {
    phase_begin("sigpingpong", m->ops, SYS_kill, s);
    for (unsigned long i = 0; i < m->ops; i++) {
      sys_kill((int)child, SIGUSR2);
      sys_sigsuspend(&wait_mask);
    }
    phase_end();
  }
  int failed = check_handled("sigpingpong", m, handled, ops);
  sys_kill((int)child, SIGUSR2); /* done */
  int status = -1;
  sys_wait((int)child, &status);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("sigpingpong: FAIL: the child ended with wait status %#x\n", status);
    failed = 1;
  }
  sys_sigprocmask(SIG_UNBLOCK, &block, 0);
  return failed;
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
