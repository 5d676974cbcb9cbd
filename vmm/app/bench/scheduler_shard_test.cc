#include "vmm/app/bench/scheduler_shard.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace sigvisor::bench {
namespace {

Environment Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(SchedulerShardTest, SlurmArrayTaskIsItsPlaceInTheArray) {
  absl::StatusOr<ScheduledShard> s = ShardFromScheduler(Env(
      {{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_MIN", "0"}, {"SLURM_ARRAY_TASK_MAX", "2"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->shard, (Shard{3, 3}));
  EXPECT_NE(s->source.find("Slurm job array (SLURM_ARRAY_TASK_ID=2 of 0-2)"), std::string::npos)
      << s->source;
}

TEST(SchedulerShardTest, SlurmArraysWithAnOffsetAndAStep) {
  absl::StatusOr<ScheduledShard> s = ShardFromScheduler(Env({{"SLURM_ARRAY_TASK_ID", "7"},
                                                             {"SLURM_ARRAY_TASK_MIN", "3"},
                                                             {"SLURM_ARRAY_TASK_MAX", "11"},
                                                             {"SLURM_ARRAY_TASK_STEP", "2"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->shard, (Shard{3, 5}));  // 3 5 7 9 11: the third of five
  EXPECT_FALSE(ShardFromScheduler(Env({{"SLURM_ARRAY_TASK_ID", "8"},
                                       {"SLURM_ARRAY_TASK_MIN", "3"},
                                       {"SLURM_ARRAY_TASK_MAX", "11"},
                                       {"SLURM_ARRAY_TASK_STEP", "2"}}))
                   .ok());
}

TEST(SchedulerShardTest, KubernetesIndexedJobNeedsItsCompletionsPassedIn) {
  absl::StatusOr<ScheduledShard> s =
      ShardFromScheduler(Env({{"JOB_COMPLETION_INDEX", "0"}, {"SIGVISOR_SHARDS", "4"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->shard, (Shard{1, 4}));
  EXPECT_NE(s->source.find("Kubernetes Indexed Job"), std::string::npos);
  absl::StatusOr<ScheduledShard> missing = ShardFromScheduler(Env({{"JOB_COMPLETION_INDEX", "0"}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("SIGVISOR_SHARDS"), std::string::npos);
  EXPECT_FALSE(
      ShardFromScheduler(Env({{"JOB_COMPLETION_INDEX", "4"}, {"SIGVISOR_SHARDS", "4"}})).ok());
}

TEST(SchedulerShardTest, WithoutOrWithBothSchedulersItSaysWhatIsMissing) {
  absl::StatusOr<ScheduledShard> none = ShardFromScheduler(Env({}));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("SLURM_ARRAY_TASK_ID"), std::string::npos);
  EXPECT_NE(none.status().message().find("JOB_COMPLETION_INDEX"), std::string::npos);
  EXPECT_FALSE(ShardFromScheduler(Env({{"SLURM_ARRAY_TASK_ID", "0"},
                                       {"SLURM_ARRAY_TASK_MIN", "0"},
                                       {"SLURM_ARRAY_TASK_MAX", "1"},
                                       {"JOB_COMPLETION_INDEX", "0"},
                                       {"SIGVISOR_SHARDS", "2"}}))
                   .ok());
  absl::StatusOr<ScheduledShard> bad = ShardFromScheduler(Env({{"SLURM_ARRAY_TASK_ID", "x"},
                                                               {"SLURM_ARRAY_TASK_MIN", "0"},
                                                               {"SLURM_ARRAY_TASK_MAX", "1"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SLURM_ARRAY_TASK_ID='x'"), std::string::npos);
}

}  // namespace
}  // namespace sigvisor::bench
