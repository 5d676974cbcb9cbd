/* The classic workloads as Linux programs, the same operations as the bundled
 * kernel's (guest-kit/user/workloads.c): each returns 0 when its handler ran exactly
 * once per signal sent, non-zero otherwise. */
#ifndef SIGVISOR_GUEST_KIT_LINUX_WORKLOADS_H_
#define SIGVISOR_GUEST_KIT_LINUX_WORKLOADS_H_

/* How a workload measures: `warmup` unmeasured operations, then each measured phase
 * of `ops` operations made `samples` times in a row under one name (init.c says why),
 * so `ops * samples` measured operations in all. */
struct measure {
  unsigned long ops;
  unsigned long samples; /* at least 1 */
  unsigned long warmup;  /* at least 1 */
};

int linux_divzero(const struct measure *m);
int linux_lat_sig(const struct measure *m);
int linux_sigpingpong(const struct measure *m);
int linux_pipe_rw(const struct measure *m);
/* Across CPUs: the parent pinned to CPU 0, its child to CPU 1; where CPU 1 cannot be
 * had (one CPU) each prints "NAME: needs --vcpus 2 or more" and returns 1. */
int linux_xcpu_pingpong(const struct measure *m);
int linux_xcpu_kick(const struct measure *m);
int linux_xcpu_wake(const struct measure *m);

#endif /* SIGVISOR_GUEST_KIT_LINUX_WORKLOADS_H_ */
