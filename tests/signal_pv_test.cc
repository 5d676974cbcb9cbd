// signal=pv (docs/pv-signals.md): the VMM writes the signal frames and reads them back.
// A signal=pv kernel passes the signal self-test; every frame and sigreturn the VMM
// computes is byte-identical to the kernel's own (--check-signal-frames, over the
// self-test, which covers every signal kind the kernel delivers, and the signal
// workloads, on both builds); each signal costs exactly its two exits (the frame and
// the return), named in the ledger; and a checked run counts the kernel's own path.
//
// Both lanes: a KVM test (tags = ["kvm"]); the refusal needs no KVM and runs everywhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "tests/run_json_support.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::PhaseNamed;
using ::sigvisor::testing::RunJson;
using ::sigvisor::testing::Sigvisor;
using json = nlohmann::json;

constexpr char kSkip[] = "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
const std::vector<std::string> kBuilds = {"signal=pv", "accelerated,signal=pv"};

// The run's exits whose detail names `detail` ("hypercall signal_frame").
uint64_t Detail(const json& run, const std::string& detail) {
  uint64_t count = 0;
  for (const json& row : run["exits"]["by_detail"]) {
    if (row["detail"].get<std::string>().find(detail) != std::string::npos) {
      count += row["count"].get<uint64_t>();
    }
  }
  return count;
}

// Every frame and sigreturn of the self-test, compared with the kernel's; the
// self-test's own checks pass too (exit 0).
TEST(SignalPvTest, FramesAreTheKernelsByteForByteOverTheSelfTest) {
  if (!HaveKvm()) GTEST_SKIP() << kSkip;
  for (const std::string& build : kBuilds) {
    SCOPED_TRACE(build);
    const json doc = RunJson("--variant " + build + " --workload selftest --check-signal-frames");
    const json& frames = doc["signal_frames"];
    ASSERT_TRUE(frames.is_object()) << doc.dump();
    EXPECT_TRUE(frames["checked"].get<bool>());
    EXPECT_EQ(frames["mismatches"], json::array()) << frames.dump();
    // The self-test's sigpingpong alone is 2,000 signals: all of them compared.
    EXPECT_GE(frames["frames_compared"].get<uint64_t>(), 2000u);
    EXPECT_EQ(frames["written"], 0);  // checking, the kernel writes them
    // Its bad-stack case: the frame would leave the user range, and the kernel's own
    // path (which kills the task with SIGSEGV) decides.
    EXPECT_GE(frames["declined"].value("a frame outside the user range", 0), 1) << frames.dump();
  }
}

// The signal workloads' frames, compared, on both builds: the counts are exact.
TEST(SignalPvTest, WorkloadFramesAreTheKernelsAndCountedExactly) {
  if (!HaveKvm()) GTEST_SKIP() << kSkip;
  for (const std::string& build : kBuilds) {
    for (const char* workload : {"divzero", "lat_sig", "sigpingpong"}) {
      SCOPED_TRACE(build + " " + workload);
      const json doc = RunJson("--variant " + build + " --workload " + workload +
                               " --ops 3 --check-signal-frames");
      const json& frames = doc["signal_frames"];
      EXPECT_EQ(frames["mismatches"], json::array()) << frames.dump();
      EXPECT_EQ(frames["frames_compared"], frames["sigreturns_compared"]);
      EXPECT_GT(frames["frames_compared"].get<uint64_t>(), 0u);
      EXPECT_EQ(frames["declined"], json::object());
      // A checked run counts the kernel's own path: its calls are the instrument's.
      EXPECT_EQ(Detail(doc, "hypercall signal_frame"), 0u);
      for (const json& phase : doc["phases"]) EXPECT_EQ(phase["per_op"]["exits"], 0.0);
    }
  }
}

// Without the check the VMM writes every frame: each signal is exactly two exits,
// the frame and the return, and nothing else exits.
TEST(SignalPvTest, EachSignalIsTwoExitsTheFrameAndTheReturn) {
  if (!HaveKvm()) GTEST_SKIP() << kSkip;
  struct Expected {
    const char* workload;
    const char* phase;
    double exits_per_op;  // signals per op, times two
  };
  for (const std::string& build : kBuilds) {
    for (const Expected& e :
         {Expected{"divzero", "divzero", 2}, Expected{"lat_sig", "sig_inst", 0},
          Expected{"lat_sig", "sig_hndl", 2}, Expected{"sigpingpong", "sigpingpong", 4},
          Expected{"pipe_rw", "pipe_rw", 0}}) {
      SCOPED_TRACE(build + " " + e.workload + " " + e.phase);
      const json doc = RunJson("--variant " + build + " --workload " + e.workload + " --ops 4");
      const json* phase = PhaseNamed(doc, e.phase);
      ASSERT_NE(phase, nullptr);
      EXPECT_EQ((*phase)["per_op"]["exits"], e.exits_per_op);
      EXPECT_EQ((*phase)["exits"]["by_reason"].value("io", 0.0) / 4, e.exits_per_op)
          << phase->dump();
      if (e.exits_per_op > 0) {
        const json& frames = doc["signal_frames"];
        EXPECT_EQ(frames["written"], frames["restored"]);
        EXPECT_EQ(frames["declined"], json::object());
        EXPECT_EQ(Detail(doc, "hypercall signal_frame"), frames["written"].get<uint64_t>());
        EXPECT_EQ(Detail(doc, "hypercall sigreturn"), frames["restored"].get<uint64_t>());
      }
    }
    SCOPED_TRACE(build + " selftest");
    const json selftest = RunJson("--variant " + build + " --workload selftest");
    EXPECT_EQ(selftest["exit_code"], 0);
  }
}

TEST(SignalPvTest, CheckingABuildThatMakesNoFramesIsRefused) {
  ExpectOneLineError(Sigvisor("run --check-signal-frames --workload divzero"),
                     "--check-signal-frames compares the frames the VMM builds for a signal=pv "
                     "kernel");
}

}  // namespace
