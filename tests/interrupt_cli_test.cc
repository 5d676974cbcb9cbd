// Ctrl-C (SIGINT) and SIGTERM during `sigvisor run` (issue 30): the run stops the
// guest, reports what it measured (the phases already ended, the exit table, the
// statistics) with the outcome `interrupted` and status 124, removes --gdb's
// temporary file, and a second signal ends the process at once.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "vmm/report/testing/json_schema.h"

namespace {

using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::SignalledResult;
using ::sigvisor::testing::SigvisorSignalled;
using ::sigvisor::testing::DocsSchema;
using json = nlohmann::json;

// sigvisor's status when the guest did not exit (vmm/app/cli/exit_status.h).
constexpr int kGuestFailed = 124;

// The summary workload prints one line per workload as it ends: divzero's line means
// its phase ended, and lat_sig (100,000 ops) is still running when the signal comes.
const std::vector<std::string> kMipsRun = {"run", "--arch", "mips", "--ops", "100000"};

std::vector<std::string> With(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// What every interrupted run's JSON says: status 124, a valid document, outcome
// interrupted, incomplete. The document, or null when there is none.
json InterruptedDocument(const SignalledResult& r) {
  EXPECT_EQ(r.killed_by, 0) << r.result.err;
  EXPECT_EQ(r.result.status, kGuestFailed) << r.result.err;
  json doc = json::parse(r.result.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << r.result.out << r.result.err;
  if (doc.is_discarded()) return nullptr;
  for (const std::string& error :
       sigvisor::testing::ValidateJson(doc, DocsSchema("sigvisor.run-2.schema.json"))) {
    ADD_FAILURE() << error;
  }
  EXPECT_EQ(doc["outcome"], "interrupted");
  EXPECT_FALSE(doc["complete"].get<bool>());
  return doc;
}

// ... and that it holds the phase that ended.
void ExpectInterruptedDocument(const SignalledResult& r) {
  json doc = InterruptedDocument(r);
  ASSERT_FALSE(doc.is_null());
  EXPECT_NE(doc["diagnosis"].get<std::string>().find("SIGINT"), std::string::npos);
  ASSERT_FALSE(doc["phases"].empty()) << doc["phases"];
  EXPECT_EQ(doc["phases"][0]["name"], "divzero");
  EXPECT_FALSE(doc["exits"].empty());
  EXPECT_NE(r.result.err.find("sigvisor: interrupted:"), std::string::npos) << r.result.err;
}

TEST(InterruptCliTest, AnInterruptedMipsRunReportsWhatItMeasured) {
  SignalledResult r = SigvisorSignalled(kMipsRun, "divzero:", {SIGINT});
  ASSERT_TRUE(r.marker_seen) << r.result.out << r.result.err;
  EXPECT_EQ(r.killed_by, 0) << r.result.err;
  EXPECT_EQ(r.result.status, kGuestFailed) << r.result.err;
  const std::string& out = r.result.out;
  EXPECT_NE(out.find("exits by reason"), std::string::npos) << out;
  EXPECT_NE(out.find("phase divzero"), std::string::npos) << out;
  EXPECT_EQ(out.find("phase lat_sig"), std::string::npos) << out;  // it never ended
  EXPECT_NE(out.find("interpreter stats (whole run):"), std::string::npos) << out;
  EXPECT_NE(out.find("INCOMPLETE: the run ended with interrupted"), std::string::npos) << out;
  EXPECT_NE(r.result.err.find("(interrupt again to quit at once)"), std::string::npos)
      << r.result.err;
  EXPECT_NE(r.result.err.find("sigvisor: interrupted: SIGINT or SIGTERM stopped the run"),
            std::string::npos)
      << r.result.err;
}

TEST(InterruptCliTest, AnInterruptedMipsRunWritesItsJson) {
  // SIGTERM as SIGINT; with --json the console goes to stderr.
  ExpectInterruptedDocument(
      SigvisorSignalled(With(kMipsRun, {"--json"}), "divzero:", {SIGTERM}));
}

TEST(InterruptCliTest, ASecondSignalEndsTheProcessAtOnce) {
  // The handler blocks both signals while it runs and leaves both at their default:
  // the SIGTERM right behind the SIGINT kills the process, with no report.
  SignalledResult r = SigvisorSignalled(kMipsRun, "divzero:", {SIGINT, SIGTERM});
  ASSERT_TRUE(r.marker_seen) << r.result.out << r.result.err;
  EXPECT_EQ(r.killed_by, SIGTERM) << r.result.status << "\n" << r.result.out << r.result.err;
  EXPECT_EQ(r.result.out.find("exits by reason"), std::string::npos) << r.result.out;
}

TEST(InterruptCliTest, AnInterruptedKvmRunReportsWhatItMeasured) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  ExpectInterruptedDocument(SigvisorSignalled({"run", "--ops", "100000", "--json"},
                                              "divzero:", {SIGINT}));
}

TEST(InterruptCliTest, AnInterruptedGdbRunRemovesItsTemporaryFile) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  // --gdb writes the bundled kernel out for gdb, then waits for gdb before the guest
  // runs: the first signal ends the wait, and the second, right behind it, may kill the
  // process before it reports; the first has removed the file already.
  SignalledResult r = SigvisorSignalled({"run", "--gdb", "127.0.0.1:0"}, "waiting for gdb on",
                                        {SIGINT, SIGTERM});
  ASSERT_TRUE(r.marker_seen) << r.result.out << r.result.err;
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("sigvisor-" + std::to_string(r.pid) + "-kernel-baseline.elf");
  EXPECT_NE(r.result.err.find(file.string()), std::string::npos) << r.result.err;
  EXPECT_FALSE(std::filesystem::exists(file)) << file;
}

// Issue 30: Ctrl-C while `run --gdb` waits for gdb ended nothing (the wait went on
// until a second signal killed the process). It ends the wait: the run is reported as
// interrupted before the guest's first instruction, status 124, the file removed.
TEST(InterruptCliTest, AnInterruptWhileWaitingForGdbEndsTheRun) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SignalledResult r = SigvisorSignalled({"run", "--gdb", "127.0.0.1:0", "--json"},
                                        "waiting for gdb on", {SIGINT}, std::chrono::seconds(60));
  ASSERT_TRUE(r.marker_seen) << r.result.out << r.result.err;
  json doc = InterruptedDocument(r);
  ASSERT_FALSE(doc.is_null());
  const std::string diagnosis = doc["diagnosis"].get<std::string>();
  EXPECT_NE(diagnosis.find("SIGINT"), std::string::npos) << diagnosis;
  EXPECT_NE(diagnosis.find("waited for gdb"), std::string::npos) << diagnosis;
  EXPECT_NE(r.result.err.find("sigvisor: interrupted: SIGINT or SIGTERM stopped the run while it "
                              "waited for gdb"),
            std::string::npos)
      << r.result.err;
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("sigvisor-" + std::to_string(r.pid) + "-kernel-baseline.elf");
  EXPECT_NE(r.result.err.find(file.string()), std::string::npos) << r.result.err;
  EXPECT_FALSE(std::filesystem::exists(file)) << file;
}

}  // namespace
