// Summary statistics of repeated timings, the rank test that says whether two
// variants' timings differ by more than the noise, and the sign test for paired runs.
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

// What paired differences (a_i - b_i, one per repetition, the two measured side by
// side) say, with no assumption about their distribution: the sign test (under "no
// difference" each pair is equally likely to go either way) and the interval for the
// median difference that comes with it, from the sorted differences' order statistics.
struct PairedComparison {
  size_t pairs = 0;   // differences given
  size_t above = 0;   // a > b
  size_t below = 0;   // a < b (the rest are ties)
  double median = 0;  // of all the differences
  // [low, high] = [d_(k), d_(n+1-k)] of the sorted differences, with the largest k
  // whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least 95%; no interval below
  // 6 pairs, where even [min, max] covers less (5 pairs: 93.75%).
  bool has_interval = false;
  double low = 0, high = 0;
  double coverage = 0;  // the interval's exact coverage, e.g. 0.961 for 9 pairs
  // Two-sided exact sign-test p-value, ties left out; 1 without pairs.
  double sign_p = 1;

  bool operator==(const PairedComparison&) const = default;
};
PairedComparison ComparePaired(std::span<const double> differences);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_STATS_H_
