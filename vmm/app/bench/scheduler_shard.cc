#include "vmm/app/bench/scheduler_shard.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace sigvisor::bench {
namespace {

constexpr std::string_view kNoScheduler =
    "--shard auto: no array task of a scheduler in the environment (Slurm job arrays "
    "set SLURM_ARRAY_TASK_ID; Kubernetes Indexed Jobs set JOB_COMPLETION_INDEX, with "
    "the Job's completions passed in as SIGVISOR_SHARDS); or give --shard i/n";

// A variable that must be a non-negative whole number.
absl::StatusOr<uint64_t> Number(const Environment& env, std::string_view name) {
  std::optional<std::string> value = env(name);
  if (!value) {
    return absl::InvalidArgumentError(absl::StrFormat("--shard auto: %s is not set", name));
  }
  uint64_t number = 0;
  if (!absl::SimpleAtoi(*value, &number)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--shard auto: %s='%s' is not a whole number", name, *value));
  }
  return number;
}

// The slice as Shard holds it, or why it does not fit.
absl::StatusOr<ScheduledShard> Slice(uint64_t index, uint64_t count, std::string source) {
  constexpr uint64_t kMaxShards = 1'000'000;
  if (count > kMaxShards) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--shard auto: %s asks for %d slices; at most %d", source, count, kMaxShards));
  }
  ScheduledShard result;
  result.shard.index = static_cast<uint32_t>(index);
  result.shard.count = static_cast<uint32_t>(count);
  result.source = std::move(source);
  return result;
}

absl::StatusOr<ScheduledShard> FromSlurm(const Environment& env) {
  absl::StatusOr<uint64_t> id = Number(env, "SLURM_ARRAY_TASK_ID");
  absl::StatusOr<uint64_t> min = Number(env, "SLURM_ARRAY_TASK_MIN");
  absl::StatusOr<uint64_t> max = Number(env, "SLURM_ARRAY_TASK_MAX");
  for (const auto* s : {&id, &min, &max}) {
    if (!s->ok()) return s->status();
  }
  uint64_t step = 1;
  if (env("SLURM_ARRAY_TASK_STEP")) {
    absl::StatusOr<uint64_t> given = Number(env, "SLURM_ARRAY_TASK_STEP");
    if (!given.ok()) return given.status();
    step = *given;
  }
  if (step == 0 || *min > *max || *id < *min || *id > *max || (*id - *min) % step != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--shard auto: Slurm array task %d is not one of %d-%d:%d", *id, *min, *max, step));
  }
  return Slice((*id - *min) / step + 1, (*max - *min) / step + 1,
               absl::StrFormat("the Slurm job array (SLURM_ARRAY_TASK_ID=%d of %d-%d%s)", *id,
                               *min, *max, step == 1 ? "" : absl::StrFormat(":%d", step)));
}

absl::StatusOr<ScheduledShard> FromKubernetes(const Environment& env) {
  absl::StatusOr<uint64_t> index = Number(env, "JOB_COMPLETION_INDEX");
  if (!index.ok()) return index.status();
  if (!env("SIGVISOR_SHARDS")) {
    return absl::InvalidArgumentError(
        "--shard auto: a Kubernetes Indexed Job (JOB_COMPLETION_INDEX is set) must pass its "
        "completions count in as SIGVISOR_SHARDS");
  }
  absl::StatusOr<uint64_t> count = Number(env, "SIGVISOR_SHARDS");
  if (!count.ok()) return count.status();
  if (*count == 0 || *index >= *count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--shard auto: JOB_COMPLETION_INDEX=%d is not below SIGVISOR_SHARDS=%d", *index, *count));
  }
  return Slice(*index + 1, *count,
               absl::StrFormat("the Kubernetes Indexed Job (JOB_COMPLETION_INDEX=%d, "
                               "SIGVISOR_SHARDS=%d)",
                               *index, *count));
}

}  // namespace

Environment ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

absl::StatusOr<ScheduledShard> ShardFromScheduler(const Environment& env) {
  const bool slurm = env("SLURM_ARRAY_TASK_ID").has_value();
  const bool kubernetes = env("JOB_COMPLETION_INDEX").has_value();
  if (slurm && kubernetes) {
    return absl::InvalidArgumentError(
        "--shard auto: both a Slurm array task (SLURM_ARRAY_TASK_ID) and a Kubernetes "
        "Indexed Job (JOB_COMPLETION_INDEX) are in the environment; give --shard i/n");
  }
  if (slurm) return FromSlurm(env);
  if (kubernetes) return FromKubernetes(env);
  return absl::InvalidArgumentError(std::string(kNoScheduler));
}

}  // namespace sigvisor::bench
