/* The measured workloads of the built-in program (see init.c for the names). Each
 * brackets its measured loop with phase markers and prints its own result line;
 * each returns 0 on success. */
#ifndef SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_
#define SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_

#include <stddef.h>

/* How a workload measures: `warmup` unmeasured operations (at least 1), then a
 * measured phase of `ops`. One is what every measured op needs to take the path the
 * first one paved (first-touch faults, the handler's first run). More let a VM that
 * booted milliseconds ago run the loop before it is timed, as a VM that ran firmware
 * for seconds has (`--warmup`, docs/bench-and-studies.md). */
struct measure {
  unsigned long ops;
  unsigned long warmup;
  const char *args; /* the whole command line, for a workload that reads more words */
};

int workload_divzero(const struct measure *m);
int workload_lat_sig(const struct measure *m);
int workload_sigpingpong(const struct measure *m);
int workload_pipe_rw(const struct measure *m);
/* A target for signals sent from the host (--inject sig=usr1,...): SIGUSR1 blocked
 * during a phase of `ops` getpid calls, then unblocked; it has no warm-up. Exits with
 * the number of times its handler ran; 100 if it ran while blocked, 101 if it ran
 * more often than the host sent SIGUSR1. */
int workload_hostsig(const struct measure *m);
/* The verdict on a phase whose handler ran `runs` times, for `sent` signals the
 * workload sent itself and `injected` the host sent (SYS_host_signals): 1 if signals
 * were lost (runs < sent) or came from neither (runs > sent + injected), else 0.
 * Writes the line that says so into `line`, or "" when there is nothing to say (no
 * injection and runs == sent). Runs below sent + injected are no failure: a classic
 * signal that finds the same one pending merges with it. */
int handled_verdict(char *line, size_t size, const char *what, unsigned long runs,
                    unsigned long sent, unsigned long injected);
/* The child side of sigpingpong (args: "role=pong peer=PID ops=N warmup=W"). */
int sigpingpong_child(const char *args);
/* The child side of xcpu_kick and xcpu_wake (args: "role=xcpu sleep=0|1 peer=PID
 * ops=N warmup=W"): on CPU 1, it answers each SIGUSR1 with SIGUSR2 from its handler,
 * spinning in user mode (sleep=0) or sleeping in sigsuspend (sleep=1) in between. */
int xcpu_child(const char *args);

#endif /* SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_ */
