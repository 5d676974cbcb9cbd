// Snapshots of a stock Linux kernel (docs/snapshots.md): Debian's kernel booted to its
// embedded init's quiescent point (the ORDERS marker) and saved, then restored with
// orders of each run's own: the restored runs' per-op exits and traps are a booted run's
// for divzero and lat_sig, and the restored guest passes its signal self-test. init
// holds its own FPU state across the point, so no FPU state is saved on either host
// (a PVM host gives none). Where CPL0 is emulated (PVM), where a second boot costs
// minutes, the restored runs' exits per op are checked against linux_exits_per_op.h,
// which a booted run there meets (linux_guest_test). The restore's refusals of flags it
// cannot honour run on both lanes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "tests/debian_kernel.h"
#include "tests/host_kind.h"
#include "tests/linux_exits_per_op.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::CpuLevelZeroEmulated;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::LinuxExitsPerOp;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;
using json = nlohmann::json;

json Parse(const CommandResult& r) {
  json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
  return doc;
}

// Each phase in order, with what must not depend on how the VM started: its name, ops,
// and per-op exits, traps and DR loads.
std::vector<json> PerOpCounts(const json& run) {
  std::vector<json> counts;
  for (const json& phase : run["phases"]) {
    const json& per_op = phase["per_op"];
    counts.push_back({{"name", phase["name"]},
                      {"ops", phase["ops"]},
                      {"exits", per_op["exits"]},
                      {"traps", per_op["traps"]},
                      {"dr_loads", per_op["dr_loads"]}});
  }
  return counts;
}

TEST(LinuxSnapshotTest, RestoredRunsCountAsBootedOnesAndPassTheSelfTest) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm";
  const std::string dir = TempPath("linux.snap");
  std::filesystem::remove_all(dir);
  // The snapshot names its kernel's file, which the last check below edits: a copy.
  const std::string kernel_file = TempPath("vmlinuz");
  std::filesystem::remove(kernel_file);
  std::filesystem::copy_file(kernel, kernel_file);
  const CommandResult saved =
      Sigvisor("snapshot --image " + kernel_file + " --out " + dir + " --json --timeout 20m");
  ASSERT_EQ(saved.status, 0) << saved.err;
  const json snapshot = Parse(saved);
  // init put its FPU state in its own memory (SIGVISOR_LINUX_ORDERS_FPU_HELD), so none
  // is saved; a restored init whose state was not given back fails its own check.
  EXPECT_EQ(snapshot["fpu"],
            "held by the guest (init saved it in its memory at its quiescent point)");
  std::cout << "snapshot: state " << snapshot["state_bytes"] << " bytes, memory "
            << snapshot["memory_disk_bytes"] << " bytes on disk, boot " << snapshot["boot_ns"]
            << " ns\n";

  for (const std::string workload : {"divzero", "lat_sig"}) {
    SCOPED_TRACE(workload);
    const std::string orders = " --workload " + workload + " --ops 4 --json --quiet";
    const CommandResult restored = Sigvisor("run --restore " + dir + orders);
    ASSERT_EQ(restored.status, 0) << restored.err << restored.out.substr(0, 4000);
    const json b = Parse(restored);
    EXPECT_EQ(b["outcome"], "exited");
    EXPECT_EQ(b["exit_code"], 0);
    EXPECT_EQ(b["restored_from"], dir);
    // Restored, the kernel's file is hashed, not decompressed.
    EXPECT_NE(b["image"].get<std::string>().find("restored: hashed, not decompressed"),
              std::string::npos)
        << b["image"];
    // The restored init ran the orders of this run, not the snapshot's boot's.
    const std::string console = b["console"];
    EXPECT_NE(console.find("sigvisor init: workload " + workload + ", 4 ops"), std::string::npos)
        << console;
    ASSERT_FALSE(PerOpCounts(b).empty());
    if (b["host"]["cpl0_emulated"]) {
      for (const json& phase : b["phases"]) {
        EXPECT_EQ(phase["per_op"]["exits"], LinuxExitsPerOp(phase["name"], true)) << phase.dump();
      }
      std::cout << workload << ": restored " << b["timing"].dump() << " wall " << b["wall_ns"]
                << "\n";
      continue;
    }
    const CommandResult booted = Sigvisor("run --image " + kernel + orders + " --timeout 20m");
    ASSERT_EQ(booted.status, 0) << booted.err;
    const json a = Parse(booted);
    EXPECT_EQ(PerOpCounts(b), PerOpCounts(a));
    std::cout << workload << ": restored " << b["timing"].dump() << " wall " << b["wall_ns"]
              << "; booted " << a["timing"].dump() << " wall " << a["wall_ns"] << "\n";
  }

  const CommandResult selftest =
      Sigvisor("run --restore " + dir + " --workload selftest --json --quiet");
  ASSERT_EQ(selftest.status, 0) << selftest.err << selftest.out.substr(0, 4000);
  const json doc = Parse(selftest);
  EXPECT_EQ(doc["exit_code"], 0);
  const std::string console = doc["console"];
  for (const char* passed : {"PASS siginfo", "PASS registers", "PASS blocked"}) {
    EXPECT_NE(console.find(passed), std::string::npos) << console;
  }

  // What the restored guest cannot honour, refused in one line before a vCPU runs.
  ExpectOneLineError(Sigvisor("run --restore " + dir + " --cmdline quiet --workload divzero"),
                     "cmdline with --restore");
  ExpectOneLineError(Sigvisor("run --restore " + dir + " --memory 64 --workload divzero"),
                     "memory with --restore");
  ExpectOneLineError(Sigvisor("run --restore " + dir + " --trap=patch --workload divzero"),
                     "--trap=patch is for sigvisor images");
  ExpectOneLineError(Sigvisor("run --restore " + dir + " --workload hello"),
                     "not a workload of the embedded Linux init");
  // The restore hashes the kernel's file as it is given (it does not decompress it): a
  // file that changed since is another kernel.
  { std::ofstream(kernel_file, std::ios::app | std::ios::binary) << '\0'; }
  ExpectOneLineError(Sigvisor("run --restore " + dir + " --workload divzero"),
                     "was taken of another kernel");
}

// `bench --restore` with a Linux build beside the bundled kernel's: each build saved once
// and restored for every run, with the per-op counts of a bench that boots each run.
TEST(LinuxSnapshotTest, BenchRestoresALinuxBuild) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm";
  const std::string bench = "bench --variants 'baseline; linux=" + kernel +
                            "' --workloads divzero,lat_sig --repetitions 1 --ops 4 --json "
                            "--timeout 20m";
  if (CpuLevelZeroEmulated()) {
    GTEST_SKIP() << "the booting bench beside costs a Linux boot per run where CPL0 is "
                    "emulated (7-13 minutes each); linux_guest_test's bench restores its "
                    "Linux build here";
  }
  const CommandResult restored = Sigvisor(bench + " --restore");
  ASSERT_EQ(restored.status, 0) << restored.err << restored.out.substr(0, 4000);
  const CommandResult booted = Sigvisor(bench);
  ASSERT_EQ(booted.status, 0) << booted.err << booted.out.substr(0, 4000);
  const json a = Parse(booted), b = Parse(restored);
  EXPECT_EQ(b["complete"], true);
  EXPECT_EQ(b["matrix"]["restored"], true);
  ASSERT_EQ(b["cells"].size(), a["cells"].size());
  ASSERT_FALSE(a["cells"].empty());
  for (size_t i = 0; i < a["cells"].size(); ++i) {
    SCOPED_TRACE(a["cells"][i]["variant"].dump() + " " + a["cells"][i]["phase"].dump());
    EXPECT_EQ(b["cells"][i]["variant"], a["cells"][i]["variant"]);
    EXPECT_EQ(b["cells"][i]["phase"], a["cells"][i]["phase"]);
    EXPECT_EQ(b["cells"][i]["per_op"]["exits"], a["cells"][i]["per_op"]["exits"]);
    EXPECT_EQ(b["cells"][i]["per_op"]["traps"], a["cells"][i]["per_op"]["traps"]);
  }
}

}  // namespace
