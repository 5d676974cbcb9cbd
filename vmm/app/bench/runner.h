// Runs a slice of a bench matrix, one guest boot per run, in schedule order. The
// boot itself is a callback (KVM in the CLI, a fake in tests), so the scheduling,
// bookkeeping and progress are testable without /dev/kvm.
#ifndef SIGVISOR_VMM_APP_BENCH_RUNNER_H_
#define SIGVISOR_VMM_APP_BENCH_RUNNER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "vmm/app/bench/matrix.h"
#include "vmm/app/bench/results.h"

namespace sigvisor::bench {

// Boots one run's guest and returns what it measured; an error when it could not
// boot at all (then recorded as outcome "host_error").
using RunFunction = std::function<absl::StatusOr<RunSample>(const RunSpec&)>;

struct Progress {
  size_t done = 0;        // runs finished in this slice (this one included)
  size_t total = 0;       // runs in this slice
  uint64_t elapsed_ns = 0;
  const RunSample* last = nullptr;  // the run just finished
};

struct RunnerOptions {
  Shard shard;
  HostInfoSummary host;
  std::function<void(const Progress&)> on_progress;  // after each run; may be empty
  std::function<bool()> stop_requested;              // checked before each run; may be empty
};

// Runs the shard's slice of `matrix`. A failed run is recorded and the rest still
// run; a stop request ends the slice early (result.interrupted).
BenchResult RunMatrix(const Matrix& matrix, const RunFunction& run, const RunnerOptions& options);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_RUNNER_H_
