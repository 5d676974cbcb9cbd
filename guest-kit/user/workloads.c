/*
 * The four classic workloads, one per seed experiment:
 *   divzero      integer divides by zero, each caught by a SIGFPE handler that
 *                skips the `div` through its ucontext (seed 000's microbenchmark)
 *   lat_sig      lmbench's `sig inst` (sigaction) and `sig hndl` (kill self, the
 *                handler runs) (seeds 002 and 004)
 *   sigpingpong  SIGUSR1/SIGUSR2 between two processes, `ops` round trips (seed 003)
 *   pipe_rw      a 1-byte write then read on a pipe (seed 001's program)
 *
 * Each runs unmeasured operations first (struct measure's `warmup`, at least one), so
 * that the measured ones all take the same kernel path (e.g. a sigqueue entry from
 * the free list, not the pool's first use): per-op instruction counts are then exact
 * whatever `ops` is.
 */
#include "guest-kit/user/workloads.h"

#include "guest-kit/lib/format.h"
#include "guest-kit/user/ulib.h"

/* How often the running workload's handler ran. A phase is judged on the runs and on
 * the host's signals (SYS_host_signals) between two points, read in this order: the
 * host's count, then handled = 0; at the end, the runs, then the host's count. A host
 * signal that lands in between is then counted as injected even if it ran no
 * handler yet, never as a run the host did not send. */
static volatile unsigned long handled;

static const char *plural(unsigned long n) { return n == 1 ? "" : "s"; }

int handled_verdict(char *line, size_t size, const char *what, unsigned long runs,
                    unsigned long sent, unsigned long injected) {
  line[0] = 0;
  if (runs < sent) {
    /* Each merge of two pending signals costs one run, and one with a host signal
     * in it is covered by that signal's own count: so fewer runs than the workload
     * sent means at least that many of its own were lost, injections or not. */
    if (!injected) {
      format(line, size, "%s: FAIL: the handler ran %lu time%s for %lu signal%s sent: %lu lost",
             what, runs, plural(runs), sent, plural(sent), sent - runs);
    } else {
      format(line, size,
             "%s: FAIL: the handler ran %lu time%s for %lu signal%s sent and %lu injected by "
             "the host: %lu of the workload's own lost",
             what, runs, plural(runs), sent, plural(sent), injected, sent - runs);
    }
    return 1;
  }
  if (runs > sent + injected) {
    const unsigned long extra = runs - sent - injected;
    format(line, size,
           "%s: FAIL: the handler ran %lu time%s for %lu signal%s sent and %lu injected by the "
           "host: %lu extra signal%s that neither the workload nor the host sent",
           what, runs, plural(runs), sent, plural(sent), injected, extra, plural(extra));
    return 1;
  }
  if (!injected) return 0; /* runs == sent: nothing to say */
  const unsigned long merged = sent + injected - runs;
  if (!merged) {
    format(line, size,
           "%s: the handler ran %lu time%s: %lu for the workload's signals, %lu for signals "
           "injected by the host",
           what, runs, plural(runs), sent, injected);
  } else {
    format(line, size,
           "%s: the handler ran %lu time%s: %lu for the workload's signals, %lu for the %lu "
           "injected by the host (%lu merged with the same signal already pending, as classic "
           "signals are)",
           what, runs, plural(runs), sent, runs - sent, injected, merged);
  }
  return 0;
}

/* Prints the verdict's line, if it has one; returns its status. */
static int check_handled(const char *what, unsigned long runs, unsigned long sent,
                         unsigned long injected) {
  char line[256];
  const int status = handled_verdict(line, sizeof(line), what, runs, sent, injected);
  if (line[0]) printf("%s\n", line);
  return status;
}

/* The timing line: TSC cycles per operation, read inside the phase's markers, so that
 * it times the operations alone. The markers and their calibrations are the VMM's
 * measuring apparatus (hypercalls under sigvisor, nothing under QEMU, where the
 * kernel has no hypercall device): outside the bracket, the line means the same under
 * every VMM, which is what `bench --peer` compares. */
static void report(const char *name, unsigned long ops, uint64_t cycles, const char *unit) {
  printf("%s: %lu %s, %lu tsc cycles per %s\n", name, ops, unit,
         (unsigned long)(ops ? cycles / ops : 0), unit);
}

#if defined(__mips__)
/* MIPS `div` does not trap; the divide-by-zero check compilers emit after it,
 * `teq divisor, zero, 7`, does (SIGFPE, FPE_INTDIV). The handler steps over it. */
#define DIV_INSN_BYTES 4
#define UC_PC(uc) ((uc)->uc_mcontext.sc_pc)

static inline void divide_by_zero(void) {
  __asm__ volatile("div $0, %0, %1\n\t"
                   "teq %1, $0, 7"
                   :
                   : "r"(1), "r"(0)
                   : "hi", "lo", "memory");
}
#else
/* `divq %rcx` is 48 f7 f1: the handler steps over its 3 bytes. */
#define DIV_INSN_BYTES 3
#define UC_PC(uc) ((uc)->uc_mcontext.rip)

static inline void divide_by_zero(void) {
  __asm__ volatile("xor %%edx, %%edx\n\t"
                   "mov $1, %%eax\n\t"
                   "divq %%rcx"
                   :
                   : "c"(0ul)
                   : "rax", "rdx", "memory");
}
#endif

static void on_sigfpe(int sig, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  UC_PC(uc) += DIV_INSN_BYTES;
  handled++;
}

int workload_divzero(const struct measure *m) {
  const unsigned long ops = m->ops;
  sig_install(SIGFPE, (void *)on_sigfpe, SA_SIGINFO, 0);
  for (unsigned long i = 0; i < m->warmup; i++) divide_by_zero();
  const long host = sys_host_signals(SIGFPE);
  handled = 0;
  phase_begin("divzero", ops, SYS_rt_sigreturn);
  const uint64_t start = rdtsc();
  for (unsigned long i = 0; i < ops; i++) divide_by_zero();
  const uint64_t cycles = rdtsc() - start;
  phase_end();
  report("divzero", ops, cycles, "signal");
  const unsigned long runs = handled;
  return check_handled("divzero", runs, ops, sys_host_signals(SIGFPE) - host);
}

static void on_sigusr1(int sig) { handled++; }


int workload_lat_sig(const struct measure *m) {
  const unsigned long ops = m->ops;
  for (unsigned long i = 0; i < m->warmup; i++) sig_install(SIGUSR1, (void *)on_sigusr1, 0, 0);
  long host = sys_host_signals(SIGUSR1);
  handled = 0;
  phase_begin("sig_inst", ops, SYS_rt_sigaction);
  uint64_t start = rdtsc();
  for (unsigned long i = 0; i < ops; i++) sig_install(SIGUSR1, (void *)on_sigusr1, 0, 0);
  uint64_t cycles = rdtsc() - start;
  phase_end();
  report("lat_sig sig_inst", ops, cycles, "install");
  unsigned long runs = handled;
  int failed = check_handled("lat_sig sig_inst", runs, 0, sys_host_signals(SIGUSR1) - host);

  const long self = sys_getpid();
  for (unsigned long i = 0; i < m->warmup; i++) sys_kill((int)self, SIGUSR1);
  host = sys_host_signals(SIGUSR1);
  handled = 0;
  phase_begin("sig_hndl", ops, SYS_kill);
  start = rdtsc();
  for (unsigned long i = 0; i < ops; i++) sys_kill((int)self, SIGUSR1);
  cycles = rdtsc() - start;
  phase_end();
  report("lat_sig sig_hndl", ops, cycles, "signal");
  runs = handled;
  failed |= check_handled("lat_sig sig_hndl", runs, ops, sys_host_signals(SIGUSR1) - host);
  return failed;
}

/*
 * sigpingpong: the parent sends SIGUSR2, the child answers SIGUSR1; each waits in
 * sigsuspend with its signal blocked otherwise, so none can be lost or doubled. The
 * child first tells the parent it is ready (one SIGUSR1), and after the measured
 * phase the parent tells it it is done (one more SIGUSR2).
 */
static void on_pingpong(int sig) { handled++; }

int sigpingpong_child(const char *args) {
  const int peer = (int)arg_get_ulong(args, "peer", 0);
  const unsigned long rounds =
      arg_get_ulong(args, "ops", 0) + arg_get_ulong(args, "warmup", 1); /* + the warm-up */
  sigset_t block = sigmask(SIGUSR2), wait_mask = 0;
  sys_sigprocmask(SIG_BLOCK, &block, 0);
  sig_install(SIGUSR2, (void *)on_pingpong, 0, 0);
  sys_kill(peer, SIGUSR1); /* ready */
  for (unsigned long i = 0; i < rounds; i++) {
    sys_sigsuspend(&wait_mask);
    sys_kill(peer, SIGUSR1);
  }
  /* Wait for "done" rather than exit at once: the last round then costs inside the
   * measured phase exactly what every other round does. */
  sys_sigsuspend(&wait_mask);
  const unsigned long runs = handled;
  return check_handled("sigpingpong pong", runs, rounds + 1, sys_host_signals(SIGUSR2));
}

/*
 * Across CPUs (an smp=on kernel on --vcpus 2 or more; docs/guest-kernel.md, "Several
 * CPUs"): signals between this process, on CPU 0, and a child alone on CPU 1, each
 * side pinned. Per op, the parent sends `sig` and waits in sigsuspend for the
 * child's `answer`: two cross-CPU signals, each one IPI (a wake-up of the sleeping
 * side, or a kick of the child spinning in user mode).
 *   xcpu_pingpong  sigpingpong's round trip (the child is its "pong")
 *   xcpu_kick      the child spins in user mode; its SIGUSR1 handler answers
 *   xcpu_wake      the child sleeps in sigsuspend; its SIGUSR1 handler answers
 * The parent moves itself to CPU 1 to spawn the child there (a task inherits its
 * parent's CPU), then back to CPU 0: where it cannot (one CPU, or a kernel built
 * for one), it says what the workload needs and fails, with no child started.
 */
static unsigned long xcpu_rounds;
static int xcpu_peer;

static void on_xcpu_ping(int sig) {
  if (++handled <= xcpu_rounds) sys_kill(xcpu_peer, SIGUSR2); /* not the last, "done" */
}

int xcpu_child(const char *args) {
  xcpu_peer = (int)arg_get_ulong(args, "peer", 0);
  xcpu_rounds = arg_get_ulong(args, "ops", 0) + arg_get_ulong(args, "warmup", 1);
  const int sleeps = arg_get_ulong(args, "sleep", 0) != 0;
  sigset_t block = sigmask(SIGUSR1), wait_mask = 0;
  if (sleeps) sys_sigprocmask(SIG_BLOCK, &block, 0);
  sig_install(SIGUSR1, (void *)on_xcpu_ping, 0, 0);
  sys_kill(xcpu_peer, SIGUSR2); /* ready */
  /* Until "done", the signal after the last round: handled then passes the rounds. */
  while (handled <= xcpu_rounds)
    if (sleeps) sys_sigsuspend(&wait_mask);
  return 0;
}

/* The parent side of sigpingpong and the xcpu workloads: `ops` round trips, each
 * `sig` to the child (spawned with `role`) and its `answer` back. `cross_cpu`: the
 * child runs alone on CPU 1 and this process on CPU 0. */
static int round_trips(const struct measure *m, const char *name, const char *role, int sig,
                       int answer, int cross_cpu) {
  const unsigned long ops = m->ops;
  if (cross_cpu && sys_sched_setaffinity(0, 1) < 0) {
    printf("%s: needs --vcpus 2 or more and an smp=on kernel\n", name);
    return 1;
  }
  sigset_t block = sigmask(answer), wait_mask = 0;
  sys_sigprocmask(SIG_BLOCK, &block, 0);
  sig_install(answer, (void *)on_pingpong, 0, 0);
  char args[96];
  format(args, sizeof(args), "role=%s peer=%ld ops=%lu warmup=%lu", role, sys_getpid(), ops,
         m->warmup);
  const long child = sys_spawn(args); /* cross_cpu: on CPU 1, as its parent is now */
  if (cross_cpu) sys_sched_setaffinity(0, 0);
  if (child < 0) {
    printf("%s: spawn failed: %ld\n", name, child);
    return 1;
  }
  sys_sigsuspend(&wait_mask); /* the child's "ready" */
  for (unsigned long i = 0; i < m->warmup; i++) { /* warm-up round trips */
    sys_kill((int)child, sig);
    sys_sigsuspend(&wait_mask);
  }
  const long host = sys_host_signals(answer);
  handled = 0;
  phase_begin(name, ops, SYS_kill);
  const uint64_t start = rdtsc();
  for (unsigned long i = 0; i < ops; i++) {
    sys_kill((int)child, sig);
    sys_sigsuspend(&wait_mask);
  }
  const uint64_t cycles = rdtsc() - start;
  phase_end();
  report(name, ops, cycles, "round trip");
  const unsigned long runs = handled;
  int failed = check_handled(name, runs, ops, sys_host_signals(answer) - host);
  sys_kill((int)child, sig); /* done */
  int status = -1;
  sys_wait((int)child, &status);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("%s: FAIL: the child (pid %ld) ended with wait status %#x\n", name, child, status);
    failed = 1;
  }
  return failed;
}

int workload_sigpingpong(const struct measure *m) {
  return round_trips(m, "sigpingpong", "pong", SIGUSR2, SIGUSR1, 0);
}

int workload_xcpu_pingpong(const struct measure *m) {
  return round_trips(m, "xcpu_pingpong", "pong", SIGUSR2, SIGUSR1, 1);
}

int workload_xcpu_kick(const struct measure *m) {
  return round_trips(m, "xcpu_kick", "xcpu sleep=0", SIGUSR1, SIGUSR2, 1);
}

int workload_xcpu_wake(const struct measure *m) {
  return round_trips(m, "xcpu_wake", "xcpu sleep=1", SIGUSR1, SIGUSR2, 1);
}

int workload_hostsig(const struct measure *m) {
  const unsigned long ops = m->ops;
  sigset_t block = sigmask(SIGUSR1);
  sys_sigprocmask(SIG_BLOCK, &block, 0);
  sig_install(SIGUSR1, (void *)on_sigusr1, 0, 0);
  const long host = sys_host_signals(SIGUSR1);
  handled = 0;
  phase_begin("hostsig", ops, SYS_getpid);
  for (unsigned long i = 0; i < ops; i++) sys_getpid();
  phase_end();
  const unsigned long before = handled; /* blocked: nothing may have run yet */
  sys_sigprocmask(SIG_UNBLOCK, &block, 0);
  const unsigned long runs = handled;
  printf("hostsig: handler ran %lu time(s) while blocked, %lu after unblocking\n", before,
         runs - before);
  if (before) return 100;
  /* It sends none itself: every run must be one of the host's. */
  if (check_handled("hostsig", runs, 0, sys_host_signals(SIGUSR1) - host)) return 101;
  return (int)runs;
}

int workload_pipe_rw(const struct measure *m) {
  const unsigned long ops = m->ops;
  int fds[2];
  if (sys_pipe(fds) < 0) return 1;
  char c = 'x';
  for (unsigned long i = 0; i < m->warmup; i++) {
    sys_write(fds[1], &c, 1);
    sys_read(fds[0], &c, 1);
  }
  phase_begin("pipe_rw", ops, SYS_write);
  const uint64_t start = rdtsc();
  for (unsigned long i = 0; i < ops; i++) {
    sys_write(fds[1], &c, 1);
    sys_read(fds[0], &c, 1);
  }
  const uint64_t cycles = rdtsc() - start;
  phase_end();
  report("pipe_rw", ops, cycles, "iteration");
  sys_close(fds[0]);
  sys_close(fds[1]);
  return 0;
}
