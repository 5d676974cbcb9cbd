/*
 * /init of the Linux guest's initramfs: runs the workload the kernel command line
 * names, marks its phases for the VMM, reports its exit and powers the machine off.
 * Linux hands init the boot parameters it does not know and that have no dot as
 * environment variables:
 *   sigvisor_workload=summary|all|divzero|lat_sig|sigpingpong|pipe_rw|selftest|
 *                     xcpu_pingpong|xcpu_kick|xcpu_wake  (summary; xcpu_*: --vcpus 2+;
 *                             the catalogue's rows for it, guest-kit/abi/workloads.inc)
 *                             (all: the summary's workloads, then the self-test: what
 *                             one boot checks, where a boot costs minutes)
 *   sigvisor_ops=N            measured operations per phase (16)
 *   sigvisor_repeats=R        samples: each measured phase made R times in a row
 *                             under one name (5; 0 counts as 1)
 *   sigvisor_warmup=W         unmeasured operations before a workload's phases
 *                             (1; 0 counts as 1)
 *   sigvisor_case=NAME|all    the self-test's case (all)
 * Run anywhere else (not as pid 1, or with SIGVISOR_MARKER=none) it prints the
 * markers instead and exits with the status: its host tests run it so.
 * SIGVISOR_MARKER=trap makes it write the markers to the port anyway, ungranted, so
 * that each faults for a tracer (the marker decoder's test); SIGVISOR_FPU_SAVE=fxsave
 * holds its FPU state across its quiescent point by fxsave, as under "noxsave".
 */
#include "guest-kit/lib/string.h"
#include "guest-kit/linux/lrt.h"
#include "guest-kit/linux/marker.h"
#include "guest-kit/linux/selftest.h"
#include "guest-kit/linux/workloads.h"

#define DEFAULT_OPS 16

/*
 * Why samples. Where CPL0 is emulated, KVM counts every kernel instruction between a
 * phase's markers: the signal path's, and whatever else the kernel did meanwhile (a
 * timer tick, an RCU callback, a wake-up). That other work only ever adds, so the
 * smallest per-op count over several phases is the signal path's exact cost and the
 * spread shows how much interference there was; the VMM's reports group phases of
 * one name so (vmm/report/phase_spread.h). Whole phases repeated rather than a phase
 * per op: a marker is a VM exit (on PVM ~20-75 us), so a phase per op would put two
 * exits around every op and, on a fast host, leave each op's time below the marker
 * calibration's noise, where a repeated N-op phase keeps every figure of the single
 * phase; and calibrating once (before sample 1) makes each further sample cost two
 * markers. For an exact minimum the samples must be short enough that some escape
 * every tick: on PVM a Linux signal is ms of emulated kernel against a tick every
 * 4 ms (HZ=250), so measure there with few ops per phase and more repeats
 * (sigvisor_ops=1 sigvisor_repeats=20: docs/linux-workloads.md).
 */
#define DEFAULT_REPEATS 5

static int linux_summary(const struct measure *m) {
  int failed = 0;
  failed |= linux_divzero(m);
  failed |= linux_lat_sig(m);
  failed |= linux_sigpingpong(m);
  failed |= linux_pipe_rw(m);
  return failed;
}

static int linux_all(const struct measure *m) {
  int failed = linux_summary(m);
  failed |= linux_selftest_cases("all");
  return failed;
}

static int linux_selftest(const struct measure *m) {
  (void)m;
  const char *which = env_get("sigvisor_case");
  return linux_selftest_cases(which ? which : "all");
}

struct workload {
  const char *name;
  int (*run)(const struct measure *m);
};

/* The catalogue's rows this init runs, each by its function linux_<name>. Each is
 * declared from its row first, so that it may be defined in any file of the program
 * (a static one above keeps its internal linkage). */
#define RUNS_LINUX(name) int linux_##name(const struct measure *m);
#define RUNS_BOTH(name) RUNS_LINUX(name)
#define RUNS_BUNDLED(name)
#define SIGVISOR_WORKLOAD(name, inits, ops, warmup, bench, cpus, what) RUNS_##inits(name)
#include "guest-kit/abi/workloads.inc"
#undef RUNS_LINUX
#define RUNS_LINUX(name) {#name, linux_##name},
static const struct workload workloads[] = {
#include "guest-kit/abi/workloads.inc"
};
#undef SIGVISOR_WORKLOAD

#define WORKLOAD_COUNT (sizeof(workloads) / sizeof(workloads[0]))

static int run(const char *name, const struct measure *m) {
  for (unsigned i = 0; i < WORKLOAD_COUNT; i++)
    if (strcmp(name, workloads[i].name) == 0) return workloads[i].run(m);
  char known[256];
  size_t used = 0;
  for (unsigned i = 0; i < WORKLOAD_COUNT; i++) {
    const size_t len = strlen(workloads[i].name);
    if (used + len + 2 > sizeof(known)) break;
    if (i > 0) known[used++] = ' ';
    memcpy(known + used, workloads[i].name, len);
    used += len;
  }
  known[used] = 0;
  printf("sigvisor init: unknown workload '%s' (known: %s)\n", name, known);
  return 127;
}

/* The workload's exit status, run in a child when this is the guest's pid 1. Linux
 * logs every fault of pid 1 that has a handler too (show_unhandled_signals treats
 * init's signals as unhandled): that kernel work would land inside the phases, so
 * the workloads run in a child whose faults are quiet. It inherits the I/O bitmap. */
static int run_as_child(const char *name, const struct measure *m) {
  const long child = sys_fork();
  if (child < 0) {
    printf("sigvisor init: fork failed: %ld\n", child);
    return 1;
  }
  if (child == 0) sys_exit(run(name, m));
  int status = -1;
  if (sys_wait((int)child, &status) != child) return 1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  printf("sigvisor init: the workload was killed by signal %d\n", WTERMSIG(status));
  return 128 + WTERMSIG(status);
}

/* Reports `status` and ends: the VMM ends the run at the exit marker; a guest's init
 * powers off for a VMM that did not, and must never return (the kernel would panic). */
static int finish(int status, int guest_init) {
  printf("sigvisor init: exit status %d\n", status);
  marker_exit(status);
  if (!guest_init) return status;
  const long ret = sys_reboot(LINUX_REBOOT_CMD_POWER_OFF);
  printf("sigvisor init: power off failed: %ld\n", ret);
  for (;;) {
    const sigset_t none = 0;
    sys_sigsuspend(&none);
  }
}

int main(int argc, char **argv) {
  const int guest_init = sys_getpid() == 1;
  /* On CPU 0 for good, and so every workload (the xcpu ones' children move): the VMM
   * takes markers from vCPU 0 only. One CPU or many, CPU 0 is there. */
  if (guest_init) sys_pin_to_cpu(0);
  marker_init(guest_init);
  /* The quiescent point: a snapshot is taken here. A restore that lost init's FPU
   * state ends the run before any workload can measure with it. */
  if (marker_orders() != 0) return finish(1, guest_init);
  const char *name = env_get("sigvisor_workload");
  if (!name) name = "summary";
  struct measure m = {env_get_ulong("sigvisor_ops", DEFAULT_OPS),
                      env_get_ulong("sigvisor_repeats", DEFAULT_REPEATS),
                      env_get_ulong("sigvisor_warmup", 1)};
  if (m.samples == 0) m.samples = 1;
  if (m.warmup == 0) m.warmup = 1;
  printf("sigvisor init: workload %s, %lu ops, %lu samples, %lu warm-up\n", name, m.ops,
         m.samples, m.warmup);
  return finish(guest_init ? run_as_child(name, &m) : run(name, &m), guest_init);
}
