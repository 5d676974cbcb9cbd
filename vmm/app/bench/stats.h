// Summary statistics of repeated timings, and the rank test that says whether two
// variants' timings differ by more than the noise.
#ifndef SIGVISOR_VMM_APP_BENCH_STATS_H_
#define SIGVISOR_VMM_APP_BENCH_STATS_H_

#include <cstddef>
#include <span>

namespace sigvisor::bench {

struct Summary {
  size_t n = 0;
  double median = 0;  // of an even count: the mean of the middle two
  double min = 0;
  double max = 0;
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n - 1); 0 for n < 2

  bool operator==(const Summary&) const = default;
};

// All zeros for an empty sample.
Summary Summarize(std::span<const double> values);

// The two-sided p-value of the Mann-Whitney U test that `a` and `b` come from the
// same distribution (a rank test: no assumption of normality, robust to the odd
// slow run). Exact for samples of up to 50 each without ties, else the normal
// approximation with continuity and tie corrections. 1 when either sample is empty
// or every value is equal.
double MannWhitneyP(std::span<const double> a, std::span<const double> b);

// The smallest p MannWhitneyP can give samples of `m` and `n` values (no ties, one
// sample wholly below the other): 2 / C(m + n, m) while exact, e.g. 0.33 for two runs
// against two. 1 when either is empty.
double MannWhitneyMinP(size_t m, size_t n);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_STATS_H_
