// Count and latency aggregates of one kind of event (Firecracker's metric shape):
// count, sum, min, max in nanoseconds; and, because a mean and a max hide the shape
// users ask about (a few slow exits or many middling ones), a log2 histogram.
#ifndef SIGVISOR_VMM_LEDGER_LATENCY_H_
#define SIGVISOR_VMM_LEDGER_LATENCY_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

namespace sigvisor {

// Log2 buckets: bucket 0 holds 0 ns, bucket k (1..) [2^(k-1), 2^k) ns; the last one
// everything from 2^(kLatencyBuckets-2) ns (about 275 s) up.
inline constexpr size_t kLatencyBuckets = 40;
using LatencyBuckets = std::array<uint64_t, kLatencyBuckets>;

inline size_t LatencyBucket(uint64_t ns) {
  return std::min<size_t>(std::bit_width(ns), kLatencyBuckets - 1);
}
// The bucket's bounds in ns: [low, high); the last bucket's high is the largest value.
inline uint64_t LatencyBucketLow(size_t bucket) {
  return bucket == 0 ? 0 : uint64_t{1} << (bucket - 1);
}
inline uint64_t LatencyBucketHigh(size_t bucket) {
  return bucket + 1 >= kLatencyBuckets ? std::numeric_limits<uint64_t>::max()
                                       : uint64_t{1} << bucket;
}

struct LatencyStats {
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  uint64_t min_ns = std::numeric_limits<uint64_t>::max();
  uint64_t max_ns = 0;
  LatencyBuckets buckets{};

  // No allocation: the run loop calls this inside an exit's timed interval.
  void Add(uint64_t ns) {
    ++count;
    sum_ns += ns;
    min_ns = std::min(min_ns, ns);
    max_ns = std::max(max_ns, ns);
    ++buckets[LatencyBucket(ns)];
  }
  // Adds another aggregate's events (e.g. another vCPU's).
  void Merge(const LatencyStats& other) {
    count += other.count;
    sum_ns += other.sum_ns;
    min_ns = std::min(min_ns, other.min_ns);
    max_ns = std::max(max_ns, other.max_ns);
    for (size_t i = 0; i < kLatencyBuckets; ++i) buckets[i] += other.buckets[i];
  }
  uint64_t mean_ns() const { return count ? sum_ns / count : 0; }
  // 0 when empty, so reports never print the sentinel.
  uint64_t min_or_zero_ns() const { return count ? min_ns : 0; }
};

// The events between two points of a LatencyStats (a phase's, between its markers):
// counts, sum and buckets subtract; a min and a max do not, so there are none.
struct LatencyHistogram {
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  LatencyBuckets buckets{};

  uint64_t mean_ns() const { return count ? sum_ns / count : 0; }
};

// after - before (before empty: all of after), never below zero.
inline LatencyHistogram LatencyBetween(const LatencyStats& after, const LatencyStats* before) {
  auto minus = [](uint64_t a, uint64_t b) { return a >= b ? a - b : 0; };
  LatencyHistogram out{after.count, after.sum_ns, after.buckets};
  if (before == nullptr) return out;
  out.count = minus(after.count, before->count);
  out.sum_ns = minus(after.sum_ns, before->sum_ns);
  for (size_t i = 0; i < kLatencyBuckets; ++i)
    out.buckets[i] = minus(after.buckets[i], before->buckets[i]);
  return out;
}

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_LATENCY_H_
