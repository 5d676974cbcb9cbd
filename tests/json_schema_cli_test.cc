// Every JSON document sigvisor prints, from real command output, against its schema in
// docs/schema/ (docs/json.md): run (KVM and the MIPS interpreter, with
// traps and injections), probe, sites and sites --uaccess, trace and trace --diff,
// images, bench and merge, study and study tramp. Each names the binary that wrote it
// (its "sigvisor" member, as `sigvisor --version` says).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "tests/host_lane.h"
#include "vmm/report/testing/json_schema.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;
using ::sigvisor::testing::DocsSchema;
using json = nlohmann::json;

// `sigvisor ARGS` (it must succeed), its stdout parsed, valid against `schema`, and
// naming this binary.
json ValidDocument(const std::string& args, const std::string& schema, int status = 0) {
  CommandResult r = Sigvisor(args);
  EXPECT_EQ(r.status, status) << args << "\n" << r.err;
  json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    ADD_FAILURE() << args << ": stdout is not JSON\n" << r.out;
    return json::object();
  }
  for (const std::string& error : sigvisor::testing::ValidateJson(doc, DocsSchema(schema))) {
    ADD_FAILURE() << args << ": " << error;
  }
  const std::string version = Sigvisor("--version").out;
  EXPECT_NE(version.find("sigvisor " + doc["sigvisor"].value("version", "?") + " (commit " +
                         doc["sigvisor"].value("commit", "?")),
            std::string::npos)
      << args << ": " << doc["sigvisor"] << " vs " << version;
  return doc;
}

// The key sets of every row of `rows`.
std::set<std::set<std::string>> RowShapes(const json& rows) {
  std::set<std::set<std::string>> shapes;
  for (const json& row : rows) {
    std::set<std::string> keys;
    for (const auto& [key, value] : row.items()) keys.insert(key);
    shapes.insert(keys);
  }
  return shapes;
}

TEST(JsonSchemaCliTest, ImagesAndSites) {
  const json images = ValidDocument("images --json", "sigvisor.images-1.schema.json");
  EXPECT_GE(images["variants"].size(), 10u);
  ValidDocument("sites --json", "sigvisor.sites-1.schema.json");
  ValidDocument("sites --uaccess --json", "sigvisor.uaccess_sites-1.schema.json");
}

// `run --arch mips`: the interpreter's counters are not KVM's statistics, the host is
// the interpreter, and nothing is trapped.
TEST(JsonSchemaCliTest, RunOnTheMipsInterpreter) {
  const json doc = ValidDocument(
      "run --arch mips --variant tramp=vdso --cores 2 --workload lat_sig "
      "--ops 2 --json --quiet",
      "sigvisor.run-2.schema.json");
  EXPECT_EQ(doc["host"]["kind"], "mips-interpreter");
  EXPECT_TRUE(doc["host"]["cpl0_emulated"].is_null());
  EXPECT_TRUE(doc["kvm_stats"].is_null());
  EXPECT_GT(doc["interpreter_stats"].value("instructions", 0), 0);
  EXPECT_TRUE(doc["timing"]["boot_kvm_stats"].is_null());
  EXPECT_GT(doc["timing"]["boot_interpreter_stats"].value("instructions", 0), 0);
  for (const json& phase : doc["phases"]) {
    EXPECT_TRUE(phase["kvm_stats"].is_null()) << phase["name"];
    EXPECT_TRUE(phase["kvm_exits"].is_null()) << phase["name"];  // no KVM, no KVM exits
    EXPECT_TRUE(phase["interpreter_stats"].contains("instructions")) << phase["name"];
  }
  EXPECT_EQ(doc["traps"]["mechanism"], "off");
  EXPECT_TRUE(doc["traps"]["reason"].is_null());
  EXPECT_EQ(doc["mips"]["cores"], 2);
}

TEST(JsonSchemaCliTest, RunUnderKvm) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  const json off =
      ValidDocument("run --workload console --ops 3 --json --quiet", "sigvisor.run-2.schema.json");
  EXPECT_TRUE(off["traps"]["reason"].is_null());
  EXPECT_FALSE(off.contains("interpreter_stats"));  // KVM's statistics only
  // A statistic the host's KVM does not keep is left out, with the reason.
  for (const json& stat : off["kvm_stats_left_out"]) {
    EXPECT_FALSE(off["kvm_stats"].contains(stat["name"].get<std::string>())) << stat;
    EXPECT_LT(stat["kvm"].get<uint64_t>(), stat["vmm"].get<uint64_t>()) << stat;
  }
  if (off["host"]["kind"] == "pvm") {
    ASSERT_FALSE(off["kvm_stats_left_out"].empty());  // PVM leaves io_exits at 0
    EXPECT_EQ(off["kvm_stats_left_out"][0]["name"], "io_exits");
  }
  // KVM's own exits beside the VMM's in every phase (docs/json.md, "KVM's own exits"),
  // without what this host does not keep; null only where it gives no statistics.
  ASSERT_FALSE(off["phases"].empty());
  for (const json& phase : off["phases"]) {
    SCOPED_TRACE(phase["name"].get<std::string>());
    if (off["kvm_stats"].empty()) {
      EXPECT_TRUE(phase["kvm_exits"].is_null());
      continue;
    }
    ASSERT_TRUE(phase["kvm_exits"].is_object());
    EXPECT_EQ(phase["kvm_exits"]["total"].is_null(), !off["kvm_stats"].contains("exits"));
    EXPECT_EQ(phase["per_op"]["kvm_exits"].is_null(), phase["kvm_exits"]["total"].is_null());
    for (const json& stat : off["kvm_stats_left_out"]) {
      EXPECT_FALSE(phase["kvm_exits"]["by_reason"].contains(stat["name"].get<std::string>()));
    }
    for (const auto& [name, count] : phase["kvm_exits"]["by_reason"].items()) {
      EXPECT_GT(count.get<uint64_t>(), 0u) << name;
      EXPECT_TRUE(phase["per_op"]["kvm_exits_by_reason"].contains(name)) << name;
    }
  }

  // Traps: by_site has one shape in the run and in its phases.
  const json traps = ValidDocument("run --workload divzero --ops 2 --trap=auto --json --quiet",
                                   "sigvisor.run-2.schema.json");
  EXPECT_EQ(traps["traps"]["reason"].type(), json::value_t::string);
  ASSERT_FALSE(traps["traps"]["by_site"].empty());
  const json& phase_sites = traps["phases"][0]["traps"]["by_site"];
  ASSERT_FALSE(phase_sites.empty());
  EXPECT_EQ(RowShapes(phase_sites), RowShapes(traps["traps"]["by_site"]));
  // --trap=pv: the guest counts its own debug-register writes.
  const json pv =
      ValidDocument("run --variant debugreg=pv --trap=pv --workload divzero --ops 2 --json --quiet",
                    "sigvisor.run-2.schema.json");
  EXPECT_EQ(pv["traps"]["mechanism"], "pv");
}

TEST(JsonSchemaCliTest, RunWithAnInjection) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  const json injected = ValidDocument(
      "run --workload hostsig --ops 4 --inject sig=usr1,op=2 --json --quiet",
      "sigvisor.run-2.schema.json", /*status=*/1);  // the handler ran once: hostsig exits 1
  EXPECT_EQ(injected["injections"].size(), 1u);
}

TEST(JsonSchemaCliTest, ProbeAndTrace) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  ValidDocument("probe --json --iterations 2 --repeats 1", "sigvisor.probe-1.schema.json");
  const json trace =
      ValidDocument("trace --workload divzero --ops 1 --json", "sigvisor.trace-1.schema.json");
  EXPECT_FALSE(trace["entries"].empty());
  ValidDocument("trace --workload divzero --ops 1 --variant dr7=always --diff dr7=lazy --json",
                "sigvisor.trace-diff-1.schema.json");
}

TEST(JsonSchemaCliTest, BenchMergeAndStudies) {
  const json tramp = ValidDocument("study tramp --ops 20 --repetitions 1 --cores 2 --json",
                                   "sigvisor.study_tramp-1.schema.json");
  EXPECT_TRUE(tramp.contains("sigvisor"));
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  const std::string bench =
      "bench --workloads console --variants baseline --traps off --ops 2 "
      "--repetitions 2 --json";
  const std::string part1 = TempPath("schema-part1.json"), part2 = TempPath("schema-part2.json");
  for (const auto& [shard, path] : {std::pair{"1/2", part1}, std::pair{"2/2", part2}}) {
    CommandResult r = Sigvisor(bench + " --shard " + shard);
    ASSERT_EQ(r.status, 0) << r.err;
    std::ofstream(path) << r.out;
    const json part = json::parse(r.out);
    EXPECT_TRUE(
        sigvisor::testing::ValidateJson(part, DocsSchema("sigvisor.bench-1.schema.json")).empty());
    EXPECT_TRUE(part.contains("sigvisor")) << shard;
  }
  const json merged =
      ValidDocument("merge --json " + part1 + " " + part2, "sigvisor.bench-1.schema.json");
  EXPECT_TRUE(merged.contains("sigvisor"));
  EXPECT_EQ(merged["runs_measured"], 2);
  const json study =
      ValidDocument("study dequeue --ops 2 --repetitions 1 --json", "sigvisor.study-1.schema.json");
  EXPECT_TRUE(study.contains("sigvisor"));
}

}  // namespace
