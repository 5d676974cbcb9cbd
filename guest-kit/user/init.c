/*
 * init: the first user program. The boot command line picks a workload:
 *   workload=hello   (default) greet, then a measured phase of `ops` getpid calls
 *   workload=console a measured phase of `ops` one-line writes (one VM exit each)
 *   workload=fault   divide by zero: the kernel kills init with SIGFPE (status 136)
 * Each measured loop is bracketed by phase markers, which the VMM turns into a
 * per-operation report.
 */
#include "guest-kit/lib/string.h"
#include "guest-kit/user/ulib.h"

static int hello(unsigned long ops) {
  printf("hello from user mode: pid %ld\n", sys_getpid());
  uint64_t start = rdtsc();
  phase_begin("getpid", ops);
  for (unsigned long i = 0; i < ops; i++) sys_getpid();
  phase_end();
  uint64_t cycles = rdtsc() - start;
  printf("getpid: %lu calls, %lu tsc cycles per call\n", ops, ops ? cycles / ops : 0);
  return 0;
}

static int console(unsigned long ops) {
  static const char line[] = "console line\n";
  phase_begin("console", ops);
  for (unsigned long i = 0; i < ops; i++) sys_write(1, line, sizeof(line) - 1);
  phase_end();
  return 0;
}

static int fault(void) {
  printf("dividing by zero\n");
  /* An explicit div: the compiler turns `1 / x` in C into compares, without one. */
  unsigned long quotient;
  __asm__ volatile("xor %%edx, %%edx\n\tdivq %2" : "=a"(quotient) : "a"(1ul), "r"(0ul) : "rdx");
  return (int)quotient;
}

int main(const char *args) {
  char workload[32] = "hello";
  arg_get(args, "workload", workload, sizeof(workload));
  unsigned long ops = arg_get_ulong(args, "ops", 16);
  if (strcmp(workload, "hello") == 0) return hello(ops);
  if (strcmp(workload, "console") == 0) return console(ops);
  if (strcmp(workload, "fault") == 0) return fault();
  printf("init: unknown workload '%s' (known: hello console fault)\n", workload);
  return 127;
}
