// Snapshots (docs/snapshots.md): a VM saved at its guest's quiescent point and restored
// runs every workload with the per-op counts of a booted run, under every trap
// mechanism the host gives; two restores of one snapshot run side by side and agree;
// and a snapshot that cannot be reproduced exactly is refused in one line before a vCPU
// runs. The counts compared are the ledger's and the trap engine's (exits, traps, DR
// loads per op) and, where the host counts them (PVM), kernel instructions per op.
//
// Both lanes: this is a KVM test (tags = ["kvm"]); the refusals that need no KVM run
// everywhere.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "vmm/report/testing/json_schema.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;
using ::sigvisor::testing::DocsSchema;
using json = nlohmann::json;

// Small enough for the hardware lane (TCG) and a PVM host alike; counts per op do not
// depend on it.
constexpr char kOps[] = "4";
const std::vector<std::string> kWorkloads = {"divzero", "lat_sig", "sigpingpong", "pipe_rw",
                                             "hello"};

json Parse(const CommandResult& r) {
  json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  return doc;
}

// The text with every number as '#': the timings the guest prints differ run to run.
std::string MaskNumbers(const json& text) {
  return std::regex_replace(text.get<std::string>(), std::regex("[0-9]+"), "#");
}

// Each phase's per-op counts that must not depend on how the VM started: name ->
// {exits, traps, dr_loads, kernel_insns (null where the host does not count)}.
std::map<std::string, json> PerOpCounts(const json& run) {
  std::map<std::string, json> counts;
  for (const json& phase : run["phases"]) {
    const json& per_op = phase["per_op"];
    counts[phase["name"].get<std::string>()] = {
        {"exits", per_op["exits"]},
        {"traps", per_op["traps"]},
        {"dr_loads", per_op["dr_loads"]},
        {"kernel_insns", per_op.value("kernel_insns", json(nullptr))}};
  }
  return counts;
}

std::string Snapshot(const std::string& name, const std::string& flags = "") {
  const std::string dir = TempPath(name);
  std::filesystem::remove_all(dir);
  const CommandResult r = Sigvisor("snapshot --json --out " + dir + " " + flags);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return "";
  json doc = Parse(r);
  for (const std::string& error :
       sigvisor::testing::ValidateJson(doc, DocsSchema("sigvisor.snapshot-1.schema.json"))) {
    ADD_FAILURE() << error;
  }
  return dir;
}

// The booted run and the restored run of `workload` under `trap`, compared.
void ExpectRestoredLikeBooted(const std::string& dir, const std::string& variant,
                              const std::string& workload, const std::string& trap) {
  SCOPED_TRACE(variant + " " + workload + " --trap=" + trap);
  const std::string common =
      " --json --quiet --workload " + workload + " --ops " + kOps + " --trap=" + trap;
  const CommandResult booted = Sigvisor("run --variant " + variant + common);
  ASSERT_EQ(booted.status, 0) << booted.err;
  const CommandResult restored = Sigvisor("run --restore " + dir + common);
  ASSERT_EQ(restored.status, 0) << restored.err;
  const json booted_doc = Parse(booted), restored_doc = Parse(restored);
  for (const std::string& error :
       sigvisor::testing::ValidateJson(restored_doc, DocsSchema("sigvisor.run-2.schema.json"))) {
    ADD_FAILURE() << error;
  }
  EXPECT_EQ(restored_doc["restored_from"], dir);
  EXPECT_TRUE(restored_doc["timing"]["boot_ns"].is_null());
  EXPECT_EQ(restored_doc["cmdline"], booted_doc["cmdline"]);
  // The same output, up to the timings the guest prints.
  EXPECT_EQ(MaskNumbers(restored_doc["console"]), MaskNumbers(booted_doc["console"]));
  const auto booted_counts = PerOpCounts(booted_doc);
  EXPECT_FALSE(booted_counts.empty());
  EXPECT_EQ(PerOpCounts(restored_doc), booted_counts);
}

TEST(SnapshotTest, RestoredRunsCountAsBootedOnesForEveryWorkloadAndTrapMechanism) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("baseline.snap");
  ASSERT_FALSE(dir.empty());
  for (const char* trap : {"off", "patch", "hw-gd"}) {
    // hw-gd is refused where the host's GD never exits (`sigvisor probe`): then there is
    // no booted run to compare with, and the restore must refuse it the same way.
    const CommandResult probe =
        Sigvisor(std::string("run --quiet --workload hello --ops 1 --trap=") + trap);
    if (probe.status == 125) {
      EXPECT_EQ(
          Sigvisor("run --quiet --restore " + dir + " --workload hello --trap=" + std::string(trap))
              .status,
          125);
      continue;
    }
    for (const std::string& workload : kWorkloads) {
      ExpectRestoredLikeBooted(dir, "baseline", workload, trap);
    }
  }
}

TEST(SnapshotTest, APvKernelRestoresWithItsPvPage) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("pv.snap", "--variant debugreg=pv --trap=pv");
  ASSERT_FALSE(dir.empty());
  for (const char* workload : {"divzero", "lat_sig"}) {
    ExpectRestoredLikeBooted(dir, "debugreg=pv", workload, "pv");
  }
  ExpectOneLineError(Sigvisor("run --restore " + dir + " --trap=patch"), "--trap=pv");
}

TEST(SnapshotTest, TwoRestoresOfOneSnapshotRunTogetherAndAgree) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("shared.snap");
  ASSERT_FALSE(dir.empty());
  const std::string args = " --json --quiet --workload lat_sig --ops 4 --restore " + dir + " >";
  // Both processes at once, through the shell, each with its own output file.
  const std::string a = TempPath("restore_a.json"), b = TempPath("restore_b.json");
  const std::string command = "vmm/app/cli/sigvisor run" + args + a +
                              " 2>/dev/null & vmm/app/cli/sigvisor run" + args + b +
                              " 2>/dev/null & wait";
  ASSERT_EQ(std::system(command.c_str()), 0);
  const json first = json::parse(sigvisor::testing::Slurp(a), nullptr, false);
  const json second = json::parse(sigvisor::testing::Slurp(b), nullptr, false);
  ASSERT_FALSE(first.is_discarded());
  ASSERT_FALSE(second.is_discarded());
  EXPECT_EQ(first["outcome"], "exited");
  EXPECT_EQ(PerOpCounts(first), PerOpCounts(second));
  // Neither wrote into the snapshot: its memory is mapped copy-on-write.
  EXPECT_EQ(Sigvisor("run --quiet --workload hello --restore " + dir).status, 0);
}

// bench --restore: every cell's per-op counts are those of a bench that boots, for
// two builds and two trap mechanisms, and with --traps pv the pv counterparts'.
TEST(SnapshotTest, BenchRestoreCountsAsBenchBoot) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string matrix =
      " --json --workloads divzero,lat_sig --variants 'baseline; accelerated' "
      "--traps off,patch,pv --repetitions 1 --ops 4";
  const CommandResult booted = Sigvisor("bench" + matrix);
  ASSERT_EQ(booted.status, 0) << booted.err;
  const CommandResult restored = Sigvisor("bench --restore" + matrix);
  ASSERT_EQ(restored.status, 0) << restored.err;
  const json booted_doc = Parse(booted), restored_doc = Parse(restored);
  for (const std::string& error :
       sigvisor::testing::ValidateJson(restored_doc, DocsSchema("sigvisor.bench-1.schema.json"))) {
    ADD_FAILURE() << error;
  }
  EXPECT_TRUE(restored_doc["matrix"]["restored"].get<bool>());
  EXPECT_FALSE(booted_doc["matrix"]["restored"].get<bool>());
  ASSERT_EQ(restored_doc["cells"].size(), booted_doc["cells"].size());
  ASSERT_EQ(booted_doc["cells"].size(), 3u * 2u * 3u);  // 3 phases x 2 builds x 3 mechanisms
  for (size_t i = 0; i < booted_doc["cells"].size(); ++i) {
    const json& a = booted_doc["cells"][i];
    const json& b = restored_doc["cells"][i];
    SCOPED_TRACE(a["workload"].dump() + " " + a["variant"].dump() + " " + a["trap"].dump());
    EXPECT_EQ(b["workload"], a["workload"]);
    EXPECT_EQ(b["variant"], a["variant"]);
    EXPECT_EQ(b["trap"], a["trap"]);
    EXPECT_EQ(b["per_op"], a["per_op"]);
  }
  // Its scratch snapshots are gone.
  EXPECT_EQ(restored.err.find("sigvisor: error"), std::string::npos) << restored.err;
}

// A snapshot edited after it was saved: one flipped byte in either file is refused.
TEST(SnapshotTest, AnEditedSnapshotIsRefused) {
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
  const std::string dir = Snapshot("edited.snap");
  ASSERT_FALSE(dir.empty());
  for (const std::string file : {"state", "memory"}) {
    const std::string copy = TempPath("edited_" + file + ".snap");
    std::filesystem::remove_all(copy);
    std::filesystem::copy(dir, copy);
    const std::string path = copy + "/" + file;
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    // The state's byte 40 is inside the first part's table entry; the memory's first
    // written page is where the kernel's image starts (1 MiB).
    const std::streamoff at = file == "state" ? 40 : (1 << 20) + 17;
    f.seekg(at);
    char byte = 0;
    f.read(&byte, 1);
    byte ^= 0x5a;
    f.seekp(at);
    f.write(&byte, 1);
    f.close();
    ExpectOneLineError(Sigvisor("run --quiet --restore " + copy), "snapshot");
  }
}

// What needs no KVM: flags the restored guest cannot honour, files that are no snapshot.
TEST(SnapshotTest, RefusalsBeforeAnyVcpuRuns) {
  const std::string not_a_snapshot = TempPath("not_a_snapshot");
  std::filesystem::create_directories(not_a_snapshot);
  { std::ofstream(not_a_snapshot + "/state") << "hello"; }
  ExpectOneLineError(Sigvisor("run --restore " + not_a_snapshot), "not a snapshot state file");
  ExpectOneLineError(Sigvisor("run --restore " + TempPath("missing.snap")), "missing.snap");
  for (const std::string flag : {"--variant dr7=lazy", "--memory 64", "--cmdline ops=3",
                                 "--inject sig=usr1,op=1", "--gdb 1234", "--image /dev/null"}) {
    ExpectOneLineError(Sigvisor("run --restore " + not_a_snapshot + " " + flag), "with --restore");
  }
  ExpectOneLineError(Sigvisor("snapshot"), "--out");
  ExpectOneLineError(Sigvisor("snapshot --out x --trap=patch"), "restored");
}

}  // namespace
