/* The classic workloads as Linux programs, the same operations as the bundled
 * kernel's (guest-kit/user/workloads.c): each returns 0 when its handler ran exactly
 * once per signal sent, non-zero otherwise. */
#ifndef SIGVISOR_GUEST_KIT_LINUX_WORKLOADS_H_
#define SIGVISOR_GUEST_KIT_LINUX_WORKLOADS_H_

int linux_divzero(unsigned long ops);
int linux_lat_sig(unsigned long ops);
int linux_sigpingpong(unsigned long ops);
int linux_pipe_rw(unsigned long ops);

#endif /* SIGVISOR_GUEST_KIT_LINUX_WORKLOADS_H_ */
