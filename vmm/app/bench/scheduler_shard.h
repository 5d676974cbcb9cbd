// `sigvisor bench --shard auto`: which slice of the matrix this process runs, taken
// from the array job a scheduler started it in, so that one submission runs the whole
// matrix as N tasks and `sigvisor merge` combines their results (docs/bench-on-a-scheduler.md).
//
// - Slurm job arrays (`sbatch --array=MIN-MAX[:STEP]`): SLURM_ARRAY_TASK_ID with
//   SLURM_ARRAY_TASK_MIN, _MAX and _STEP; the task's place in the array is the slice.
// - Kubernetes Indexed Jobs (`completionMode: Indexed`): JOB_COMPLETION_INDEX, 0-based,
//   with the Job's `completions` passed in as SIGVISOR_SHARDS (Kubernetes does not put
//   it in the environment).
#ifndef SIGVISOR_VMM_APP_BENCH_SCHEDULER_SHARD_H_
#define SIGVISOR_VMM_APP_BENCH_SCHEDULER_SHARD_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "vmm/app/bench/matrix.h"

namespace sigvisor::bench {

struct ScheduledShard {
  Shard shard;
  std::string source;  // which scheduler and which variables, for the log line
};

// An environment lookup: the variable's value, or nullopt when it is not set.
using Environment = std::function<std::optional<std::string>(std::string_view)>;

// The process environment (getenv).
Environment ProcessEnvironment();

// The slice the scheduler's array task is; an error that names what is missing or
// inconsistent when neither scheduler's variables make one.
absl::StatusOr<ScheduledShard> ShardFromScheduler(const Environment& env);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_SCHEDULER_SHARD_H_
