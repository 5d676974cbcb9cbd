/* The init's side of the Linux marker protocol (guest-kit/abi/sigvisor_abi.h, "The
 * Linux marker protocol"): phase markers and the exit, as port writes with their
 * arguments in registers. Without the port (a program run outside sigvisor, on the
 * host: its tests) the markers are printed instead, so the same binary runs anywhere. */
#ifndef SIGVISOR_GUEST_KIT_LINUX_MARKER_H_
#define SIGVISOR_GUEST_KIT_LINUX_MARKER_H_

#include <stdint.h>

/* Marks through the port when this is the guest's init (`guest_init`: pid 1, as
 * root), the environment does not say SIGVISOR_MARKER=none and ioperm grants the
 * port (children forked afterwards share the grant, Linux 5.5 and later); prints
 * the markers otherwise. SIGVISOR_MARKER=trap makes the port writes without asking
 * for the port (each faults: a tracer's test reads them). Says which on stdout.
 * Call once, first. */
void marker_init(int guest_init);

/* A measured phase of `ops` operations, each making Linux system call `op_syscall`
 * once (-1: none): sample `sample` (from 0) of the phases made in a row under this
 * name. Sample 0 is preceded by the calibration phases the VMM subtracts (as
 * guest-kit/user's phase_begin); the VMM keeps subtracting them from the samples
 * that follow (vmm/ledger/phase_tracker.h), so those cost their two markers only. */
void phase_begin(const char *name, unsigned long ops, int op_syscall, unsigned long sample);
void phase_end(void);

/* The quiescent point (docs/snapshots.md): asks the VMM for this run's orders, the
 * command-line words it is to take before its environment (lrt.h: env_set_orders).
 * Only through the port (a guest's init, before its first workload); elsewhere, and
 * where the VMM wrote nothing, the environment stands alone. init holds its own FPU
 * state across the point (SIGVISOR_LINUX_ORDERS_FPU_HELD) and checks that it did:
 * -1, said on stdout, when a restore lost it; 0 otherwise. */
int marker_orders(void);

/* The program's exit status, for the VMM's report (the run ends at it). */
void marker_exit(int status);

#endif /* SIGVISOR_GUEST_KIT_LINUX_MARKER_H_ */
