/* Signal numbers (Linux x86-64's), shared by the guest kernel and user programs. */
#ifndef SIGVISOR_GUEST_KIT_UAPI_SIGNAL_H_
#define SIGVISOR_GUEST_KIT_UAPI_SIGNAL_H_

#define SIGILL 4
#define SIGTRAP 5
#define SIGBUS 7
#define SIGFPE 8
#define SIGKILL 9
#define SIGUSR1 10
#define SIGSEGV 11
#define SIGUSR2 12

#endif /* SIGVISOR_GUEST_KIT_UAPI_SIGNAL_H_ */
