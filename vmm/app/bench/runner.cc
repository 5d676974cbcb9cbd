#include "vmm/app/bench/runner.h"

#include "absl/strings/str_format.h"
#include "vmm/base/clock.h"

namespace sigvisor::bench {

BenchResult RunMatrix(const Matrix& matrix, const RunFunction& run, const RunnerOptions& options) {
  BenchResult result;
  result.matrix = matrix;
  result.host = options.host;
  result.shard_count = options.shard.count;
  result.shards = {options.shard.index};
  const std::vector<RunSpec> schedule = Schedule(matrix);
  const RunRange range = ShardRange(schedule.size(), options.shard);
  result.runs_expected = range.end - range.begin;
  const uint64_t start = MonotonicNs();
  for (size_t i = range.begin; i < range.end; ++i) {
    if (options.stop_requested && options.stop_requested()) {
      result.interrupted = true;
      result.warnings.push_back(absl::StrFormat(
          "interrupted after %d of %d runs", i - range.begin, result.runs_expected));
      break;
    }
    const RunSpec& spec = schedule[i];
    absl::StatusOr<RunSample> sample = run(spec);
    RunSample recorded;
    if (sample.ok()) {
      recorded = *std::move(sample);
    } else {
      recorded.outcome = "host_error";
      recorded.exit_code = 1;
      recorded.diagnosis = std::string(sample.status().message());
    }
    recorded.spec = spec;
    recorded.shard = options.shard.index;
    if (!recorded.ok()) {
      result.warnings.push_back(absl::StrFormat(
          "run %d (%s, %s, trap %s, repetition %d) failed: %s%s", spec.index,
          matrix.workloads[spec.workload], matrix.variants[spec.variant].name,
          TrapMechanismName(matrix.traps[spec.trap]), spec.repetition, recorded.outcome,
          recorded.diagnosis.empty() ? absl::StrFormat(" (exit status %d)", recorded.exit_code)
                                     : ": " + recorded.diagnosis));
    }
    result.runs.push_back(std::move(recorded));
    if (options.on_progress) {
      options.on_progress({i - range.begin + 1, result.runs_expected, MonotonicNs() - start,
                           &result.runs.back()});
    }
  }
  return result;
}

}  // namespace sigvisor::bench
