/*
 * init: the built-in program. The boot command line (or, for a spawned process, the
 * spawn arguments) picks what it does (the workloads are the catalogue's,
 * guest-kit/abi/workloads.inc):
 *   workload=summary      (default) each classic workload briefly, then a summary
 *   workload=divzero|lat_sig|sigpingpong|pipe_rw   one workload, `ops` operations
 *                         after `warmup` unmeasured ones (1; 0 counts as 1)
 *   workload=hello        greet, then a measured phase of `ops` getpid calls
 *   workload=console      a measured phase of `ops` one-line writes (one VM exit each)
 *   workload=hostsig      SIGUSR1 blocked for `ops` getpid calls, then unblocked:
 *                         exits with how often its handler ran (fault injection)
 *   workload=fault        divide by zero with no handler: killed by SIGFPE
 *   workload=xcpu_pingpong|xcpu_kick|xcpu_wake   signals between CPU 0 and CPU 1
 *                         (an smp=on kernel on --vcpus 2 or more)
 *   workload=selftest case=NAME|all   the signal-semantics self-tests
 *   role=...              a helper process spawned by a workload or a test
 */
#include "guest-kit/lib/string.h"
#include "guest-kit/user/selftest.h"
#include "guest-kit/user/ulib.h"
#include "guest-kit/user/workloads.h"

#define DEFAULT_OPS 16

static int workload_hello(const struct measure *m) {
  const unsigned long ops = m->ops;
  printf("hello from user mode: pid %ld\n", sys_getpid());
  phase_begin("getpid", ops, SYS_getpid);
  const uint64_t start = rdtsc(); /* inside the markers, as workloads.c's report() */
  for (unsigned long i = 0; i < ops; i++) sys_getpid();
  const uint64_t cycles = rdtsc() - start;
  phase_end();
  printf("getpid: %lu calls, %lu tsc cycles per call\n", ops,
         (unsigned long)(ops ? cycles / ops : 0));
  return 0;
}

static int workload_console(const struct measure *m) {
  const unsigned long ops = m->ops;
  static const char line[] = "console line\n";
  phase_begin("console", ops, SYS_write);
  for (unsigned long i = 0; i < ops; i++) sys_write(1, line, sizeof(line) - 1);
  phase_end();
  return 0;
}

static int workload_fault(const struct measure *m) {
  (void)m;
  printf("dividing by zero\n");
#if defined(__mips__)
  /* MIPS `div` does not trap: the compiler's check after it is `teq divisor, zero, 7`
   * (Linux's BRK_DIVZERO), which is what raises SIGFPE. */
  __asm__ volatile("teq $0, $0, 7");
  return 0;
#else
  /* An explicit div: the compiler turns `1 / x` in C into compares, without one. */
  unsigned long quotient;
  __asm__ volatile("xor %%edx, %%edx\n\tdivq %2" : "=a"(quotient) : "a"(1ul), "r"(0ul) : "rdx");
  return (int)quotient;
#endif
}

/* Each classic workload briefly; the VMM's report has their per-op costs. */
static int workload_summary(const struct measure *m) {
  printf("sigvisor guest: %lu ops of each workload (see the phases below)\n", m->ops);
  int failed = 0;
  failed |= workload_divzero(m);
  failed |= workload_lat_sig(m);
  failed |= workload_sigpingpong(m);
  failed |= workload_pipe_rw(m);
  return failed;
}

static int workload_selftest(const struct measure *m) { return selftest_main(m->args); }

struct workload {
  const char *name;
  int (*run)(const struct measure *m);
};

/* The catalogue's rows this init runs, each by its function workload_<name>. Each is
 * declared from its row first, so that it may be defined in any file of the program
 * (a static one above keeps its internal linkage). */
#define RUNS_BUNDLED(name) int workload_##name(const struct measure *m);
#define RUNS_BOTH(name) RUNS_BUNDLED(name)
#define RUNS_LINUX(name)
#define SIGVISOR_WORKLOAD(name, inits, ops, warmup, bench, cpus, what) RUNS_##inits(name)
#include "guest-kit/abi/workloads.inc"
#undef RUNS_BUNDLED
#define RUNS_BUNDLED(name) {#name, workload_##name},
static const struct workload workloads[] = {
#include "guest-kit/abi/workloads.inc"
};
#undef SIGVISOR_WORKLOAD

#define WORKLOAD_COUNT (sizeof(workloads) / sizeof(workloads[0]))

/* "summary divzero ...": the names, for the refusal of one not among them. */
static void workload_names(char *out, size_t size) {
  size_t used = 0;
  for (unsigned i = 0; i < WORKLOAD_COUNT; i++) {
    const size_t len = strlen(workloads[i].name);
    if (used + len + 2 > size) break;
    if (i > 0) out[used++] = ' ';
    memcpy(out + used, workloads[i].name, len);
    used += len;
  }
  out[used] = 0;
}

int main(const char *args) {
  char role[32];
  if (arg_get(args, "role", role, sizeof(role))) return selftest_child(role, args);

  char name[32] = "summary";
  arg_get(args, "workload", name, sizeof(name));
  struct measure m = {arg_get_ulong(args, "ops", DEFAULT_OPS), arg_get_ulong(args, "warmup", 1),
                      args};
  if (m.warmup == 0) m.warmup = 1;
  for (unsigned i = 0; i < WORKLOAD_COUNT; i++)
    if (strcmp(name, workloads[i].name) == 0) return workloads[i].run(&m);
  char known[256];
  workload_names(known, sizeof(known));
  printf("init: unknown workload '%s' (known: %s)\n", name, known);
  return 127;
}
