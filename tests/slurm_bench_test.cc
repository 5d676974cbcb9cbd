// `sigvisor bench --shard auto` on a real scheduler: a one-node Slurm cluster
// (tests/slurm/single_node.sh: munged, slurmctld and slurmd from Debian's packages,
// started for this test and stopped after it) runs a 3-task job array of a small
// bench whose tasks restore one set of snapshots saved before it (`bench
// --save-snapshots`, as on shared storage); `sigvisor merge` of the three results must
// give exactly the counts of one unsharded run that boots, and each task must say which
// slice it took from where.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::Slurp;
using json = nlohmann::json;

constexpr char kBench[] = "bench --workloads divzero,lat_sig --ops 2 --repetitions 2 --json";
constexpr int kTasks = 3;
// Away from Slurm's default ports (6817/6818), so that a cluster of the machine's own
// is not disturbed.
constexpr int kPort = 17817;

int Shell(const std::string& command) {
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

class SlurmBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
    if (geteuid() != 0) GTEST_SKIP() << "the Slurm daemons need root";
    if (Shell("command -v slurmctld slurmd sbatch munged >/dev/null") != 0) {
      GTEST_SKIP() << "Slurm or munge is not installed (tools/setup.sh installs them)";
    }
    // Not under TEST_TMPDIR: munged runs as the munge user and must reach its files,
    // and the test's directories live below /root.
    char pattern[] = "/tmp/sigvisor-slurm.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    chmod(dir_.c_str(), 0755);
    const std::string log = dir_ + "/up.log";
    ASSERT_EQ(Shell("tests/slurm/single_node.sh up " + dir_ + " " + std::to_string(kPort) + " >" +
                    log + " 2>&1"),
              0)
        << Slurp(log);
    up_ = true;
  }

  void TearDown() override {
    if (up_) Shell("tests/slurm/single_node.sh down " + dir_ + " >/dev/null 2>&1");
    if (!dir_.empty()) Shell("rm -rf " + dir_);
  }

  std::string Slurm(const std::string& command) const {
    return "export SLURM_CONF=" + dir_ + "/slurm.conf; " + command;
  }

  std::string dir_;
  bool up_ = false;
};

// The exact per-op figures of each cell, keyed by what the cell is.
std::map<std::string, json> ExactCounts(const json& bench) {
  std::map<std::string, json> cells;
  for (const json& cell : bench["cells"]) {
    const std::string key = cell["workload"].get<std::string>() + "/" +
                            cell["phase"].get<std::string>() + "/" +
                            cell["variant"].get<std::string>() + "/" + cell["trap"].get<std::string>();
    cells[key] = {{"per_op", cell["per_op"]}, {"samples", cell["samples"]},
                  {"counts_agree", cell["counts_agree"]}};
  }
  return cells;
}

TEST_F(SlurmBenchTest, AJobArrayOfShardsMergesToOneRunsCounts) {
  const std::string sigvisor = (std::filesystem::current_path() / "vmm/app/cli/sigvisor").string();
  // The builds' snapshots, once, for every task to restore (the default --variants and
  // --traps, as kBench has).
  const std::string snapshots = dir_ + "/snapshots";
  const CommandResult saved = Sigvisor("bench --save-snapshots " + snapshots);
  ASSERT_EQ(saved.status, 0) << saved.err;
  const std::string job_log = dir_ + "/sbatch.log";
  ASSERT_EQ(Shell(Slurm("sbatch --parsable --array=0-" + std::to_string(kTasks - 1) + " -o " +
                        dir_ + "/task-%a.err --wrap '" + sigvisor + " " + kBench + " --snapshots " +
                        snapshots + " --shard auto > " + dir_ +
                        "/shard.$SLURM_ARRAY_TASK_ID.json' >" + job_log + " 2>&1")),
            0)
      << Slurp(job_log);
  const std::string job = Slurp(job_log).substr(0, Slurp(job_log).find('\n'));
  bool done = false;
  for (int i = 0; i < 600 && !done; ++i) {  // at most 5 minutes
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    done = Shell(Slurm("test -z \"$(squeue -h -j " + job + " 2>/dev/null)\"")) == 0;
  }
  ASSERT_TRUE(done) << "job array " << job << " did not finish";

  std::string shards;
  for (int task = 0; task < kTasks; ++task) {
    const std::string err = Slurp(dir_ + "/task-" + std::to_string(task) + ".err");
    EXPECT_NE(err.find("--shard auto: slice " + std::to_string(task + 1) + "/3 from the Slurm "
                       "job array (SLURM_ARRAY_TASK_ID=" +
                       std::to_string(task) + " of 0-2)"),
              std::string::npos)
        << err;
    shards += " " + dir_ + "/shard." + std::to_string(task) + ".json";
  }
  CommandResult merged = Sigvisor("merge --json" + shards);
  ASSERT_EQ(merged.status, 0) << merged.err;
  CommandResult whole = Sigvisor(kBench);
  ASSERT_EQ(whole.status, 0) << whole.err;
  const json m = json::parse(merged.out), w = json::parse(whole.out);
  EXPECT_EQ(m["runs_measured"], w["runs_measured"]);
  EXPECT_EQ(m["shards"]["count"], kTasks);
  EXPECT_TRUE(m["complete"].get<bool>());
  EXPECT_TRUE(m["matrix"]["restored"].get<bool>());
  EXPECT_EQ(ExactCounts(m), ExactCounts(w));
  EXPECT_FALSE(ExactCounts(w).empty());
}

}  // namespace
