/* The measured workloads of the built-in program (see init.c for the names). Each
 * brackets its measured loop with phase markers and prints its own result line;
 * each returns 0 on success. */
#ifndef SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_
#define SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_

#include <stddef.h>

int workload_divzero(unsigned long ops);
int workload_lat_sig(unsigned long ops);
int workload_sigpingpong(unsigned long ops);
int workload_pipe_rw(unsigned long ops);
/* A target for signals sent from the host (--inject sig=usr1,...): SIGUSR1 blocked
 * during a phase of `ops` getpid calls, then unblocked. Exits with the number of
 * times its handler ran; 100 if it ran while blocked, 101 if it ran more often than
 * the host sent SIGUSR1. */
int workload_hostsig(unsigned long ops);
/* The verdict on a phase whose handler ran `runs` times, for `sent` signals the
 * workload sent itself and `injected` the host sent (SYS_host_signals): 1 if signals
 * were lost (runs < sent) or came from neither (runs > sent + injected), else 0.
 * Writes the line that says so into `line`, or "" when there is nothing to say (no
 * injection and runs == sent). Runs below sent + injected are no failure: a classic
 * signal that finds the same one pending merges with it. */
int handled_verdict(char *line, size_t size, const char *what, unsigned long runs,
                    unsigned long sent, unsigned long injected);
/* The child side of sigpingpong (args: "role=pong peer=PID ops=N"). */
int sigpingpong_child(const char *args);

#endif /* SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_ */
