// `sigvisor bench --peer qemu-kvm,qemu-tcg`: the same workload on the same image under
// sigvisor and QEMU, side by side. Asserted: the table's structure, the JSON schema,
// sigvisor's per-op counts exactly (equal to a plain `run` of the same workload and
// the known divzero exit count), QEMU's columns either measured (the guest's own
// timing line) or skipped with a reason, and a QEMU not on PATH reported as skipped.
// Never a time.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/cli_test_support.h"
#include "vmm/report/testing/json_schema.h"

namespace {

using ::nlohmann::json;
using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;

constexpr char kPeerBench[] =
    "bench --peer qemu-kvm,qemu-tcg --workloads divzero --ops 2 --repetitions 1 "
    "--timeout 120s";

// Runs with PATH replaced (restored after).
CommandResult SigvisorWithPath(const std::string& path, const std::string& args) {
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  setenv("PATH", path.c_str(), 1);
  CommandResult r = Sigvisor(args);
  setenv("PATH", saved.c_str(), 1);
  return r;
}

// The per-op row of the divzero phase in a plain `sigvisor run`.
json RunPerOp() {
  CommandResult run = Sigvisor("run --workload divzero --ops 2 --quiet --json");
  EXPECT_EQ(run.status, 0) << run.err;
  json doc = json::parse(run.out);
  for (const json& phase : doc["phases"]) {
    if (phase["name"] != "divzero") continue;
    // Kernel instructions are counted exactly where the host emulates CPL0.
    EXPECT_EQ(phase["per_op"]["kernel_insns"].is_null(), !doc["host"]["cpl0_emulated"].get<bool>());
    return phase["per_op"];
  }
  ADD_FAILURE() << "no divzero phase: " << run.out;
  return json();
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(text.substr(start, nl - start));
  }
  return lines;
}

TEST(BenchPeerTest, JsonHasSigvisorCountsAndEachPeerMeasuredOrSkipped) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor(std::string(kPeerBench) + " --json");
  ASSERT_TRUE(r.status == 0 || r.status == 1) << r.err;
  json doc = json::parse(r.out);
  std::ifstream schema_file("docs/schema/sigvisor.bench-1.schema.json");
  const std::vector<std::string> errors =
      sigvisor::testing::ValidateJson(doc, json::parse(schema_file));
  EXPECT_TRUE(errors.empty()) << errors.front();

  // sigvisor: one cell (divzero, baseline, off), its counts exactly those of a run.
  ASSERT_EQ(doc["cells"].size(), 1u) << doc["cells"].dump();
  const json& cell = doc["cells"][0];
  EXPECT_EQ(cell["workload"], "divzero");
  EXPECT_EQ(cell["phase"], "divzero");
  EXPECT_EQ(cell["variant"], "baseline");
  EXPECT_EQ(cell["trap"], "off");
  EXPECT_TRUE(doc["complete"]);
  // --peer warms each VM up before its phase unless told (kPeerDefaultWarmupOps); the
  // per-op counts are a plain run's all the same.
  EXPECT_EQ(doc["matrix"]["warmup"], 300);
  const json per_op = RunPerOp();
  EXPECT_EQ(cell["per_op"]["exits"], 0.0);  // a #DE signal round trip stays in the guest
  EXPECT_EQ(cell["per_op"]["exits"], per_op["exits"]);
  EXPECT_EQ(cell["per_op"]["traps"], 0.0);
  EXPECT_EQ(cell["per_op"]["kernel_insns"], per_op["kernel_insns"]);

  // The peers: both listed, in order; each measured (its run ok, the divzero phase
  // with 2 ops and a cycle count) or skipped with a reason and no runs.
  const json& targets = doc["peers"]["targets"];
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[0]["name"], "qemu-kvm");
  EXPECT_EQ(targets[1]["name"], "qemu-tcg");
  for (const json& t : targets) {
    if (t["skipped"]) {
      EXPECT_FALSE(t["skip_reason"].get<std::string>().empty()) << t.dump();
      EXPECT_TRUE(t["runs"].empty()) << t.dump();
      continue;
    }
    ASSERT_EQ(t["runs"].size(), 1u) << t.dump();
    const json& run = t["runs"][0];
    EXPECT_TRUE(run["ok"]) << run.dump();
    EXPECT_EQ(run["exit_status"], 1);  // the guest's 0 through isa-debug-exit
    ASSERT_EQ(run["phases"].size(), 1u) << run.dump();
    EXPECT_EQ(run["phases"][0]["name"], "divzero");
    EXPECT_EQ(run["phases"][0]["ops"], 2);
    EXPECT_GT(run["phases"][0]["tsc_cycles_per_op"].get<uint64_t>(), 0u);
  }
}

TEST(BenchPeerTest, TextTableIsSideBySide) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor(kPeerBench);
  ASSERT_TRUE(r.status == 0 || r.status == 1) << r.err;
  const std::vector<std::string> lines = Split(r.out);
  ASSERT_GE(lines.size(), 9u) << r.out;
  EXPECT_EQ(lines[0].rfind("side by side: the bundled kernel (baseline), 2 ops per phase after "
                           "300 warm-up, 1 repetition, medians",
                           0),
            0u)
      << r.out;
  auto words = [](const std::string& line) {
    std::vector<std::string> out;
    std::string word;
    for (char c : line + " ") {
      if (c == ' ') {
        if (!word.empty()) out.push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
    return out;
  };
  EXPECT_EQ(words(lines[1]), (std::vector<std::string>{"workload", "phase", "metric", "sigvisor",
                                                       "qemu-kvm", "qemu-tcg"}));
  EXPECT_EQ(lines[2].rfind("divzero", 0), 0u) << r.out;
  EXPECT_NE(lines[2].find("total run ms"), std::string::npos) << r.out;
  EXPECT_NE(lines[3].find("divzero"), std::string::npos) << r.out;
  EXPECT_NE(lines[3].find("tsc cycles per op"), std::string::npos) << r.out;
  EXPECT_NE(lines[4].find("us per op"), std::string::npos) << r.out;
  // sigvisor's counts; QEMU has none ("n/a"), or the peer was skipped.
  const json per_op = RunPerOp();
  std::vector<std::string> exits = words(lines[5]);
  ASSERT_EQ(exits.size(), 6u) << lines[5];
  EXPECT_EQ(exits[3], "0.00");
  std::vector<std::string> traps = words(lines[6]);
  ASSERT_EQ(traps.size(), 6u) << lines[6];
  EXPECT_EQ(traps[3], "0.00");
  std::vector<std::string> insns = words(lines[7]);
  ASSERT_EQ(insns.size(), 7u) << lines[7];  // "kernel insns per op" is three words
  // Counted only where the host emulates CPL0 (PVM); "-" where it runs it directly.
  char expected[32] = "-";
  if (!per_op["kernel_insns"].is_null()) {
    std::snprintf(expected, sizeof(expected), "%.1f", per_op["kernel_insns"].get<double>());
  }
  EXPECT_EQ(insns[4], expected);
  for (size_t column : {5u, 6u}) {
    EXPECT_TRUE(insns[column] == "n/a" || insns[column] == "skipped") << lines[7];
  }
}

TEST(BenchPeerTest, QemuNotOnPathIsSkippedNotFailed) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  const std::string empty = TempPath("empty-path");
  mkdir(empty.c_str(), 0755);
  CommandResult r = SigvisorWithPath(empty, kPeerBench);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("qemu-kvm: skipped: qemu-system-x86_64 is not on PATH"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("qemu-tcg: skipped: qemu-system-x86_64 is not on PATH"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("bench: qemu-kvm: skipped"), std::string::npos) << r.err;
  CommandResult json_run = SigvisorWithPath(empty, std::string(kPeerBench) + " --json");
  ASSERT_EQ(json_run.status, 0) << json_run.err;
  json doc = json::parse(json_run.out);
  for (const json& t : doc["peers"]["targets"]) {
    EXPECT_TRUE(t["skipped"]);
    EXPECT_TRUE(t["runs"].empty());
  }
}

// A QEMU that cannot start the accelerator (here a stand-in that fails as QEMU does
// without /dev/kvm access) is skipped with QEMU's own reason, not a failure.
TEST(BenchPeerTest, AcceleratorThatDoesNotStartIsSkipped) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  const std::string dir = TempPath("fake-qemu");
  mkdir(dir.c_str(), 0755);
  const std::string fake = dir + "/qemu-system-x86_64";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "echo 'qemu-system-x86_64: failed to initialize kvm: Permission denied' >&2\n"
                         "exit 1\n";
  chmod(fake.c_str(), 0755);
  CommandResult r = SigvisorWithPath(dir + ":/bin:/usr/bin",
                                     "bench --peer qemu-kvm --workloads divzero --ops 2 "
                                     "--repetitions 1");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("qemu-kvm: skipped: QEMU with -accel kvm does not work here: "
                       "qemu-system-x86_64: failed to initialize kvm: Permission denied"),
            std::string::npos)
      << r.out;
}

TEST(BenchPeerTest, BadPeerInputIsOneLine) {
  ExpectOneLineError(Sigvisor("bench --peer bochs"), "--peer: 'bochs' is not a peer");
  ExpectOneLineError(Sigvisor("bench --peer qemu-tcg,qemu-tcg"), "listed twice");
  ExpectOneLineError(Sigvisor("bench --peer qemu-tcg --variants 'baseline;accelerated'"),
                     "give one --variants entry");
  ExpectOneLineError(Sigvisor("bench --peer qemu-tcg --traps patch"), "drop --traps");
  ExpectOneLineError(Sigvisor("bench --peer qemu-tcg --csv"), "no --csv");
}

}  // namespace
