// --trap, `sigvisor sites` and the trap sections of both reports, end to end through
// the sigvisor binary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"

namespace {

using Output = ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::Sigvisor;

// Status 125 (sigvisor failed: bad input) and exactly one stderr line
// "sigvisor: error: ...<fragment>...".
void ExpectRefusal(const Output& r, const std::string& fragment) {
  EXPECT_EQ(r.status, ::sigvisor::testing::kSigvisorFailed) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("sigvisor: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

bool HaveKvm() { return access("/dev/kvm", R_OK | W_OK) == 0; }
bool OnPvmHost() { return access("/sys/module/kvm_pvm", F_OK) == 0; }

TEST(SitesCommandTest, ListsEverySiteWithSymbolBytesAndDisassembly) {
  Output r = Sigvisor("sites --image tests/guests/trap_dr");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("31 trap sites"), std::string::npos) << r.out;
  for (const char* text : {"dr7_write_site", "0f 23 f8", "movq %rax, %dr7", "dr7_read_site",
                           "movq %dr7, %rbx", "41 0f 23 c0", "movq %r8, %dr0", "dr_write",
                           "dr_read"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
}

TEST(SitesCommandTest, Json) {
  Output r = Sigvisor("sites --image tests/guests/trap_seg --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "sigvisor.sites/1");
  ASSERT_EQ(doc["sites"].size(), 23u);
  const nlohmann::json& first = doc["sites"][0];
  EXPECT_EQ(first["symbol"], "mov_fs_site");
  EXPECT_EQ(first["kind"], "segment_load");
  EXPECT_EQ(first["bytes"], "8e e0");
  EXPECT_EQ(first["disassembly"], "movl %eax, %fs");
  EXPECT_EQ(first["address"].get<std::string>().rfind("0x", 0), 0u);
  int wrmsr = 0;
  for (const nlohmann::json& site : doc["sites"]) wrmsr += site["kind"] == "wrmsr";
  EXPECT_EQ(wrmsr, 3);
}

TEST(SitesCommandTest, BadInput) {
  ExpectRefusal(Sigvisor("sites --image /nonexistent/guest.elf"), "cannot open image");
  ExpectRefusal(Sigvisor("sites extra"), "no argument 'extra'");
  ExpectRefusal(Sigvisor("sites --trap=patch"), "--trap does not apply");
}

TEST(TrapFlagTest, RefusalsAreOneLine) {
  ExpectRefusal(Sigvisor("run --trap=sometimes"), "--trap 'sometimes'");
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  // pv needs a kernel that writes its debug registers into the VMM's page.
  ExpectRefusal(Sigvisor("run --trap=pv"), "needs a kernel built with debugreg=pv");
  ExpectRefusal(Sigvisor("run --trap=pv --image tests/guests/trap_dr"), "debugreg=pv");
  if (OnPvmHost()) {
    // The probe finds that the VMM's DR7.GD never exits here: say so, do not run.
    ExpectRefusal(Sigvisor("run --trap=hw-gd"), "the probe found");
    ExpectRefusal(Sigvisor("run --trap=hw-gd"), "DR7.GD does not trap");
  }
}

TEST(TrapFlagTest, JsonNamesTheMechanismAndCountsTrapsPerOp) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  Output r = Sigvisor("run --image tests/guests/trap_dr --ops 6 --trap=auto --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["trap_mechanism"], "patch");
  const nlohmann::json& traps = doc["traps"];
  EXPECT_EQ(traps["mechanism"], "patch");
  EXPECT_NE(traps["reason"].get<std::string>().find("--trap=auto"), std::string::npos);
  EXPECT_EQ(traps["sites"], 31);
  EXPECT_EQ(traps["total"].get<int>(),
            traps["by_kind"]["dr_write"].get<int>() + traps["by_kind"]["dr_read"].get<int>());
  EXPECT_EQ(traps["dr_writes"], traps["by_kind"]["dr_write"]);
  EXPECT_TRUE(traps["dr_loads"].is_number());
  ASSERT_FALSE(traps["by_site"].empty());
  EXPECT_TRUE(traps["by_site"][0].contains("address"));
  EXPECT_TRUE(traps["by_site"][0].contains("site"));
  const nlohmann::json& dr7 = doc["phases"][0];
  ASSERT_EQ(dr7["name"], "dr7");
  EXPECT_EQ(dr7["per_op"]["traps"], 2.0);
  EXPECT_EQ(dr7["per_op"]["dr_loads"], 0.0);
  EXPECT_EQ(dr7["traps"]["by_kind"]["dr_write"], 6);
  // One row per site, as at the run's level.
  std::map<std::string, nlohmann::json> sites;
  for (const nlohmann::json& row : dr7["traps"]["by_site"]) sites[row["site"]] = row;
  ASSERT_TRUE(sites.count("dr7_write_site")) << dr7["traps"];
  EXPECT_EQ(sites["dr7_write_site"]["kind"], "dr_write");
  EXPECT_EQ(sites["dr7_write_site"]["count"], 6);
  for (const nlohmann::json& row : traps["by_site"]) {
    if (row["site"] == "dr7_write_site") {
      EXPECT_EQ(sites["dr7_write_site"]["address"], row["address"]);
    }
  }
  const nlohmann::json& enable = doc["phases"][1];
  EXPECT_EQ(enable["per_op"]["dr_loads"], 1.0);
}

TEST(TrapFlagTest, EveryReportNamesTheMechanism) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  Output off = Sigvisor("run --image tests/guests/trap_seg --ops 2 --json");
  ASSERT_EQ(off.status, 0) << off.err;
  nlohmann::json doc = nlohmann::json::parse(off.out);
  EXPECT_EQ(doc["trap_mechanism"], "off");  // the default
  EXPECT_EQ(doc["traps"]["total"], 0);
  EXPECT_EQ(doc["phases"][0]["per_op"]["traps"], 0.0);

  Output text = Sigvisor("run --image tests/guests/trap_seg --ops 2 --trap=patch");
  ASSERT_EQ(text.status, 0) << text.err;
  for (const char* line : {"trap mechanism: patch (23 sites)", "traps (patch)", "segment_load",
                           "msr_write", "debug-register loads", "mov_fs_site"}) {
    EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
  }
  // Traps per op next to exits per op in the phase block.
  EXPECT_NE(text.out.find("  traps                                     2           1.00"),
            std::string::npos)
      << text.out;
}

// The acceptance run: 100 divzero signals under pv count 100 DR7 writes with
// no exit and no load, reported by kind and site as patch reports them.
TEST(TrapPvCliTest, DivzeroCountsOneDr7WritePerSignalWithoutExits) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  Output r = Sigvisor(
      "run --workload divzero --ops 100 --trap=pv --variant debugreg=pv --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["trap_mechanism"], "pv");
  EXPECT_EQ(doc["variant"]["name"], "debugreg=pv");
  const nlohmann::json& traps = doc["traps"];
  EXPECT_EQ(traps["mechanism"], "pv");
  EXPECT_NE(traps["reason"].get<std::string>().find("not swapgs"), std::string::npos);
  EXPECT_EQ(traps["sites"], 0);  // nothing patched
  // The warm-up signal's write too, and the two GS-base wrmsrs at boot.
  EXPECT_EQ(traps["by_kind"]["dr_write"], 101);
  EXPECT_EQ(traps["by_kind"]["segment_load"], 2);
  EXPECT_EQ(traps["dr_loads"], 0);
  EXPECT_EQ(traps["hypercalls"], 0);
  bool signal_site = false;
  for (const nlohmann::json& row : traps["by_site"]) {
    if (row["kind"] == "dr_write") {
      EXPECT_EQ(row["site"].get<std::string>().rfind("exit_to_user_mode+0x", 0), 0u) << row;
      EXPECT_EQ(row["count"], 101);
      signal_site = true;
    }
  }
  EXPECT_TRUE(signal_site) << traps.dump();
  const nlohmann::json& phase = doc["phases"][0];
  ASSERT_EQ(phase["name"], "divzero");
  EXPECT_EQ(phase["traps"]["by_kind"]["dr_write"], 100);
  EXPECT_EQ(phase["traps"]["hypercalls"], 0);
  EXPECT_EQ(phase["per_op"]["exits"], 0.0);
  EXPECT_EQ(phase["per_op"]["traps"], 1.0);
  EXPECT_EQ(phase["per_op"]["dr_loads"], 0.0);

  // --warmup: the warm-up signals write DR7 too, outside the phase, whose counts stay
  // exactly those above.
  Output warmed = Sigvisor(
      "run --workload divzero --ops 100 --warmup 7 --trap=pv --variant debugreg=pv --json");
  ASSERT_EQ(warmed.status, 0) << warmed.err;
  nlohmann::json warmed_doc = nlohmann::json::parse(warmed.out);
  EXPECT_EQ(warmed_doc["cmdline"], "workload=divzero ops=100 warmup=7");
  EXPECT_EQ(warmed_doc["traps"]["by_kind"]["dr_write"], 107);
  const nlohmann::json& warmed_phase = warmed_doc["phases"][0];
  EXPECT_EQ(warmed_phase["traps"]["by_kind"]["dr_write"], 100);
  EXPECT_EQ(warmed_phase["per_op"]["kernel_insns"], phase["per_op"]["kernel_insns"]);
  EXPECT_EQ(warmed_phase["per_op"]["exits"], 0.0);

  Output text = Sigvisor("run --workload divzero --ops 4 --trap=pv --variant dr7=lazy,debugreg=pv");
  ASSERT_EQ(text.status, 0) << text.err;
  for (const char* line : {"trap mechanism: pv (nothing patched", "traps (pv)", "load hypercalls",
                           "percpu_init"}) {
    EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
  }
}

}  // namespace
