#include "vmm/app/bench/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace sigvisor::bench {

Summary Summarize(std::span<const double> values) {
  Summary s;
  s.n = values.size();
  if (values.empty()) return s;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0;
  for (double v : sorted) sum += v;
  s.mean = sum / static_cast<double>(n);
  if (n > 1) {
    double squares = 0;
    for (double v : sorted) squares += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(squares / static_cast<double>(n - 1));
  }
  return s;
}

namespace {

// P(U <= u) for samples of m and n without ties, by the recurrence
// p(m, n, u) = m/(m+n) p(m-1, n, u-n) + n/(m+n) p(m, n-1, u), one row at a time.
double ExactLowerTail(size_t m, size_t n, size_t u) {
  // prev[j][k]: P(U = k) for sizes (i - 1, j); cur the same for (i, j).
  std::vector<std::vector<double>> prev(n + 1), cur(n + 1);
  for (size_t j = 0; j <= n; ++j) prev[j] = {1.0};  // i = 0: U = 0
  for (size_t i = 1; i <= m; ++i) {
    cur[0] = {1.0};
    for (size_t j = 1; j <= n; ++j) {
      std::vector<double> dist(i * j + 1, 0.0);
      const double wi = double(i) / double(i + j), wj = double(j) / double(i + j);
      // The largest value is from the first sample: it beats all j of the second.
      for (size_t k = 0; k < prev[j].size(); ++k) dist[k + j] += wi * prev[j][k];
      for (size_t k = 0; k < cur[j - 1].size(); ++k) dist[k] += wj * cur[j - 1][k];
      cur[j] = std::move(dist);
    }
    std::swap(prev, cur);
  }
  double p = 0;
  for (size_t k = 0; k <= u && k < prev[n].size(); ++k) p += prev[n][k];
  return p;
}

}  // namespace

double MannWhitneyMinP(size_t m, size_t n) {
  if (m == 0 || n == 0) return 1.0;
  std::vector<double> low(m), high(n);
  for (size_t i = 0; i < m; ++i) low[i] = double(i);
  for (size_t i = 0; i < n; ++i) high[i] = double(m + i);
  return MannWhitneyP(low, high);
}

double MannWhitneyP(std::span<const double> a, std::span<const double> b) {
  const size_t m = a.size(), n = b.size();
  if (m == 0 || n == 0) return 1.0;
  // Ranks over the pooled sample, ties sharing their mean rank.
  std::vector<std::pair<double, int>> pooled;
  for (double v : a) pooled.push_back({v, 0});
  for (double v : b) pooled.push_back({v, 1});
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double t = double(j - i);
    const double rank = (double(i + 1) + double(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_a += rank;
    }
    if (j - i > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double u_a = rank_sum_a - double(m) * double(m + 1) / 2;
  const double u_small = std::min(u_a, double(m) * double(n) - u_a);
  const double total = double(m + n);
  if (ties && tie_term == total * total * total - total) return 1.0;  // all equal
  if (!ties && m <= 50 && n <= 50) {
    const double p = 2 * ExactLowerTail(m, n, static_cast<size_t>(std::floor(u_small + 1e-9)));
    return std::min(1.0, p);
  }
  const double mean = double(m) * double(n) / 2;
  const double variance =
      double(m) * double(n) / 12 * ((total + 1) - tie_term / (total * (total - 1)));
  if (variance <= 0) return 1.0;
  const double z = (mean - u_small - 0.5) / std::sqrt(variance);
  if (z <= 0) return 1.0;
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

namespace {

// P(Binomial(n, 1/2) <= k), summed exactly in doubles (n is a repetition count).
double BinomialHalfLowerTail(size_t n, size_t k) {
  double term = std::pow(0.5, double(n));  // C(n, 0) / 2^n
  double sum = 0;
  for (size_t i = 0; i <= k && i <= n; ++i) {
    sum += term;
    term = term * double(n - i) / double(i + 1);
  }
  return sum;
}

}  // namespace

PairedComparison ComparePaired(std::span<const double> differences) {
  PairedComparison c;
  c.pairs = differences.size();
  if (differences.empty()) return c;
  std::vector<double> sorted(differences.begin(), differences.end());
  std::sort(sorted.begin(), sorted.end());
  for (double d : sorted) {
    c.above += d > 0;
    c.below += d < 0;
  }
  c.median = Summarize(sorted).median;
  const size_t n = sorted.size();
  // The largest k (1-based) whose interval still covers at least 95%.
  for (size_t k = 1; 2 * k <= n; ++k) {
    const double coverage = 1 - 2 * BinomialHalfLowerTail(n, k - 1);
    if (coverage < 0.95) break;
    c.has_interval = true;
    c.low = sorted[k - 1];
    c.high = sorted[n - k];
    c.coverage = coverage;
  }
  const size_t decided = c.above + c.below;
  if (decided > 0) {
    c.sign_p = std::min(1.0, 2 * BinomialHalfLowerTail(decided, std::min(c.above, c.below)));
  }
  return c;
}

}  // namespace sigvisor::bench
