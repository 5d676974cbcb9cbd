// The one clock sigvisor times things with: CLOCK_MONOTONIC in nanoseconds.
#ifndef SIGVISOR_VMM_BASE_CLOCK_H_
#define SIGVISOR_VMM_BASE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace sigvisor {

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_BASE_CLOCK_H_
