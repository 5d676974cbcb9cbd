/* The function of the row extra_workload.inc adds: written as docs/extending.md says a
 * workload is, in a file of its own (the bundled init declares it from its row). First
 * the warm-up ops, then `ops` getppid calls between the phase markers, each making that
 * system call exactly once, and a timing line read just inside the markers. */
#include "guest-kit/user/ulib.h"
#include "guest-kit/user/workloads.h"

int workload_catalogue_test(const struct measure *m) {
  for (unsigned long i = 0; i < m->warmup; i++) sys_getppid();
  phase_begin("catalogue_test", m->ops, SYS_getppid);
  const uint64_t start = rdtsc();
  for (unsigned long i = 0; i < m->ops; i++) sys_getppid();
  const uint64_t cycles = rdtsc() - start;
  phase_end();
  printf("catalogue_test: %lu getppid calls after %lu warm-up, %lu tsc cycles per call\n",
         m->ops, m->warmup, (unsigned long)(m->ops ? cycles / m->ops : 0));
  return 0;
}
