/* The kernel's side of fault injection (guest-kit/abi/sigvisor_abi.h, docs/inject.md):
 * reporting what an injection led to, and serving the host's signal requests. */
#ifndef SIGVISOR_GUEST_KIT_KERNEL_INJECT_H_
#define SIGVISOR_GUEST_KIT_KERNEL_INJECT_H_

#include <stdint.h>

#include "guest-kit/abi/sigvisor_abi.h"

/* Set once at boot from SIGVISOR_BOOT_INJECT_EVENTS; read on the signal paths. */
extern int inject_events;

static inline void inject_init(uint32_t boot_flags) {
  inject_events = (boot_flags & SIGVISOR_BOOT_INJECT_EVENTS) != 0;
}

/* Tells the VMM what happened (enum sigvisor_event_kind); only when it injects, so
 * that a measured run costs one test per call site and no exit. */
void inject_report(uint32_t kind, int signo, int code, int pid, uint64_t addr, uint64_t rip)
    __attribute__((cold, noinline));
#define INJECT_REPORT(...)                          \
  do {                                              \
    if (__builtin_expect(inject_events, 0)) inject_report(__VA_ARGS__); \
  } while (0)

/* The host-request interrupt (SIGVISOR_HOST_REQUEST_VECTOR): reads the mailbox and
 * sends the signal it asks for, as kill() from outside the guest would. */
void host_request(void);

#endif /* SIGVISOR_GUEST_KIT_KERNEL_INJECT_H_ */
