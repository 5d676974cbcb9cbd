// Count and latency aggregates of one kind of event (Firecracker's metric shape):
// count, sum, min, max in nanoseconds.
#ifndef SIGVISOR_VMM_LEDGER_LATENCY_H_
#define SIGVISOR_VMM_LEDGER_LATENCY_H_

#include <algorithm>
#include <cstdint>
#include <limits>

namespace sigvisor {

struct LatencyStats {
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  uint64_t min_ns = std::numeric_limits<uint64_t>::max();
  uint64_t max_ns = 0;

  void Add(uint64_t ns) {
    ++count;
    sum_ns += ns;
    min_ns = std::min(min_ns, ns);
    max_ns = std::max(max_ns, ns);
  }
  // Adds another aggregate's events (e.g. another vCPU's).
  void Merge(const LatencyStats& other) {
    count += other.count;
    sum_ns += other.sum_ns;
    min_ns = std::min(min_ns, other.min_ns);
    max_ns = std::max(max_ns, other.max_ns);
  }
  uint64_t mean_ns() const { return count ? sum_ns / count : 0; }
  // 0 when empty, so reports never print the sentinel.
  uint64_t min_or_zero_ns() const { return count ? min_ns : 0; }
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_LATENCY_H_
