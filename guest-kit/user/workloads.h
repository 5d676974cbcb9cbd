/* The measured workloads of the built-in program (see init.c for the names). Each
 * brackets its measured loop with phase markers and prints its own result line;
 * each returns 0 on success. */
#ifndef SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_
#define SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_

int workload_divzero(unsigned long ops);
int workload_lat_sig(unsigned long ops);
int workload_sigpingpong(unsigned long ops);
int workload_pipe_rw(unsigned long ops);
/* A target for signals sent from the host (--inject sig=usr1,...): SIGUSR1 blocked
 * during a phase of `ops` getpid calls, then unblocked. Exits with the number of
 * times its handler ran. */
int workload_hostsig(unsigned long ops);
/* The child side of sigpingpong (args: "role=pong peer=PID ops=N"). */
int sigpingpong_child(const char *args);

#endif /* SIGVISOR_GUEST_KIT_USER_WORKLOADS_H_ */
