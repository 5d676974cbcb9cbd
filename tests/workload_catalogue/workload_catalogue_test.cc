// One row added to the workload catalogue reaches `sigvisor run`: the scratch build
// beside this test (BUILD.bazel) has the catalogue plus extra_workload.inc's row,
// catalogue_test, and its function. Its MIPS guest runs it (exactly one getppid per
// measured op), its guest's own list names it, the host takes it for --workload and
// --warmup, bench and the help text name it; the product's sigvisor knows none of it,
// so a scratch build that lost the row cannot pass.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::Sigvisor;
using json = nlohmann::json;

constexpr char kScratch[] = "tests/workload_catalogue/sigvisor";
constexpr char kProduct[] = "vmm/app/cli/sigvisor";

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The line of `text` that starts with `start` (after blanks), or "".
std::string LineStarting(const std::string& text, const std::string& start) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, start.size(), start) == 0) return line;
    at = end + 1;
  }
  return "";
}

TEST(WorkloadCatalogueTest, TheMipsGuestRunsIt) {
  CommandResult r = Sigvisor(
      "run --arch mips --workload catalogue_test --ops 7 --warmup 3 --json", kScratch);
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["cmdline"], "workload=catalogue_test ops=7 warmup=3");
  EXPECT_TRUE(Has(doc["console"], "catalogue_test: 7 getppid calls after 3 warm-up"))
      << doc["console"];
  ASSERT_EQ(doc["phases"].size(), 1u) << doc["phases"];
  const json& phase = doc["phases"][0];
  EXPECT_EQ(phase["name"], "catalogue_test");
  EXPECT_EQ(phase["ops"], 7);
  // One system call, and so one exception, per measured op: the warm-up ops ran
  // before the phase.
  EXPECT_EQ(phase["interpreter_stats"]["syscalls"], 7);
  EXPECT_EQ(phase["interpreter_stats"]["exceptions"], 7);
}

TEST(WorkloadCatalogueTest, TheGuestsOwnListNamesIt) {
  // A name the host does not check (--cmdline) reaches the guest's init, which refuses
  // it with the names of its own table.
  CommandResult r = Sigvisor("run --arch mips --cmdline workload=no_such", kScratch);
  EXPECT_TRUE(Has(r.out, "unknown workload 'no_such' (known: ")) << r.out;
  EXPECT_TRUE(Has(r.out, " selftest catalogue_test)")) << r.out;
}

TEST(WorkloadCatalogueTest, TheHostTakesItForX86UpToKvm) {
  // Every check that needs no KVM comes before the device is opened (run_command.cc),
  // so a device that is not there shows the host took the workload and the --warmup,
  // on any machine.
  const std::string no_kvm = sigvisor::testing::TempPath("no-kvm");
  CommandResult r = Sigvisor("run --workload catalogue_test --warmup 2 --kvm " + no_kvm, kScratch);
  ExpectOneLineError(r, no_kvm + " does not exist");
}

TEST(WorkloadCatalogueTest, HelpAndBenchNameIt) {
  CommandResult run = Sigvisor("help run", kScratch);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(Has(LineStarting(run.out, "--workload "), "selftest or catalogue_test ("))
      << run.out;
  EXPECT_TRUE(Has(LineStarting(run.out, "--workload "), "hello, console,")) << run.out;

  CommandResult bench = Sigvisor("help bench", kScratch);
  ASSERT_EQ(bench.status, 0) << bench.err;
  // Its row says bench takes it, but not by default.
  const std::string workloads = LineStarting(bench.out, "--workloads ");
  EXPECT_TRUE(Has(workloads, "console, catalogue_test) or all")) << workloads;
  EXPECT_TRUE(Has(workloads, "empty: divzero,lat_sig,sigpingpong,pipe_rw ")) << workloads;
}

TEST(WorkloadCatalogueTest, TheProductKnowsNoneOfIt) {
  ExpectOneLineError(Sigvisor("run --arch mips --workload catalogue_test", kProduct),
                     "--workload 'catalogue_test' is not a workload of the bundled kernel");
  CommandResult help = Sigvisor("help run", kProduct);
  ASSERT_EQ(help.status, 0) << help.err;
  EXPECT_FALSE(Has(help.out, "catalogue_test")) << help.out;
}

}  // namespace
