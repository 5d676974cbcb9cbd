// KVM's own exits beside the VMM's: the table, and how the run's text and JSON reports
// show them, from fake statistics (no KVM).
// The reports first: <signal.h>, which gtest includes, defines si_addr as a macro,
// the name of an InjectionRecord field (so not in .clang-format's order).
// clang-format off
#include "vmm/report/json_report.h"
#include "vmm/report/kvm_exits.h"
#include "vmm/report/kvm_stat_check.h"
#include "vmm/report/text_report.h"
// clang-format on

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "vmm/report/testing/json_schema.h"

namespace sigvisor {
namespace {

TEST(KvmExitsTableTest, NamesAreUniqueAndEachSaysWhatItCounts) {
  std::set<std::string> names = {kKvmExitsTotal.name};
  for (const KvmExitStat& stat : kKvmExitReasons) {
    EXPECT_TRUE(names.insert(stat.name).second) << stat.name;
    EXPECT_GT(std::string(stat.meaning).size(), 20u) << stat.name;
    EXPECT_EQ(std::string(stat.meaning).find('\n'), std::string::npos) << stat.name;
  }
  // Checked against the VMM's own count: the statistics that count a kind of exit the
  // VMM handles, and the total.
  std::set<std::string> checked;
  for (const KvmExitStat& stat : kKvmExitReasons) {
    if (stat.vmm_reason != nullptr) checked.insert(stat.name);
  }
  EXPECT_EQ(checked,
            (std::set<std::string>{"io_exits", "mmio_exits", "halt_exits", "signal_exits"}));
  EXPECT_STREQ(kKvmExitsTotal.vmm_reason, "");
}

TEST(KvmExitsOfTest, TheNonZeroReasonsInTheTablesOrder) {
  EXPECT_FALSE(KvmExitsOf({}).has_value());  // no stats fd: nothing to say but that
  const std::optional<KvmExits> exits = KvmExitsOf({{"insn_emulation_fail", 112},
                                                    {"exits", 70},
                                                    {"io_exits", 0},
                                                    {"insn_emulation", 13520},
                                                    {"halt_poll_fail_ns", 5},  // not an exit
                                                    {"irq_exits", 3}});
  ASSERT_TRUE(exits.has_value());
  EXPECT_EQ(exits->total, 70u);
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {"irq_exits", 3}, {"insn_emulation", 13520}, {"insn_emulation_fail", 112}};
  EXPECT_EQ(exits->by_reason, want);
  // Statistics without `exits` (left out on this host): reasons, no total.
  const std::optional<KvmExits> no_total = KvmExitsOf({{"irq_exits", 1}});
  ASSERT_TRUE(no_total.has_value());
  EXPECT_FALSE(no_total->total.has_value());
  EXPECT_EQ(no_total->by_reason.size(), 1u);
}

// A PVM-like run: the VMM saw 5 io exits, none inside the phase; KVM counted 70 exits
// in the phase's 16 ops, 112 emulation failures, and keeps no io_exits.
RunRecord PvmRun() {
  RunRecord record;
  record.image = "kernel baseline (embedded)";
  record.host = {"pvm", true};
  RunResult& result = record.result;
  result.outcome = Outcome::kExited;
  result.exit_code = 0;
  result.run_ns = 1'000'000;
  for (int i = 0; i < 5; ++i) result.ledger.Record(ExitKind::kIo, "port 0x501 out", 1000);
  result.kvm_stats = {
      {"exits", 90}, {"io_exits", 0}, {"insn_emulation", 15000}, {"insn_emulation_fail", 120}};
  PhaseResult phase;
  phase.name = "divzero";
  phase.ops = 16;
  phase.wall_ns = 12'615'894;
  phase.tsc_cycles = 28'952'896;
  phase.kvm_stats = {{"exits", 70},
                     {"io_exits", 0},
                     {"mmio_exits", 0},
                     {"insn_emulation", 13520},
                     {"insn_emulation_fail", 112},
                     {"l1d_flush", 0},
                     {"pf_taken", 0}};
  result.phases.push_back(phase);
  return record;
}

TEST(KvmExitsReportTest, TextShowsKvmsExitsPerOpBesideTheVmms) {
  const std::string text = FormatRunReport(PvmRun());
  const std::string want =
      "phase divzero (16 ops)                  total         per op\n"
      "  exits                                     0           0.00\n"
      "  kvm_exits                                70           4.38\n"
      "    insn_emulation                      13520         845.00\n"
      "    insn_emulation_fail                   112           7.00\n"
      "  kernel_insns                          13520         845.00\n";
  EXPECT_NE(text.find(want), std::string::npos) << text;
  EXPECT_EQ(text.find("io_exits  "), std::string::npos) << text;  // left out: not kept here
  EXPECT_EQ(text.find("KVM stats: none"), std::string::npos) << text;
}

TEST(KvmExitsReportTest, TextSaysOnceWhereTheHostGivesNoStatistics) {
  RunRecord record = PvmRun();
  record.result.kvm_stats.clear();
  record.result.phases[0].kvm_stats.clear();
  record.result.phases.push_back(record.result.phases[0]);
  const std::string text = FormatRunReport(record);
  const std::string note = std::string("KVM stats: none: ") + kNoKvmStatistics;
  const size_t at = text.find(note);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.find(note, at + 1), std::string::npos) << text;  // once
  EXPECT_EQ(text.find("kvm_exits"), std::string::npos) << text;   // no zeros
}

TEST(KvmExitsReportTest, JsonGivesTotalsAndPerOp) {
  const nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(PvmRun()).dump());
  const nlohmann::json& phase = doc["phases"][0];
  EXPECT_EQ(
      phase["kvm_exits"],
      nlohmann::json({{"total", 70},
                      {"by_reason", {{"insn_emulation", 13520}, {"insn_emulation_fail", 112}}}}))
      << phase;
  EXPECT_EQ(phase["per_op"]["exits"], 0.0);
  EXPECT_EQ(phase["per_op"]["kvm_exits"], 4.375);
  EXPECT_EQ(phase["per_op"]["kvm_exits_by_reason"],
            nlohmann::json({{"insn_emulation", 845.0}, {"insn_emulation_fail", 7.0}}));
}

TEST(KvmExitsReportTest, JsonIsNullWithoutStatistics) {
  RunRecord record = PvmRun();
  record.result.kvm_stats.clear();
  record.result.phases[0].kvm_stats.clear();
  const nlohmann::json none = nlohmann::json::parse(RunRecordToJson(record).dump());
  EXPECT_TRUE(none["phases"][0]["kvm_exits"].is_null());
  EXPECT_TRUE(none["phases"][0]["per_op"]["kvm_exits"].is_null());
  EXPECT_TRUE(none["phases"][0]["per_op"]["kvm_exits_by_reason"].is_null());

  RunRecord mips = PvmRun();
  mips.host = {kMipsInterpreterHost, false};
  mips.stats_source = StatsSource::kMipsInterpreter;
  mips.result.phases[0].kvm_stats = {{"instructions", 3412}, {"exits", 3}};
  const nlohmann::json interpreted = nlohmann::json::parse(RunRecordToJson(mips).dump());
  EXPECT_TRUE(interpreted["phases"][0]["kvm_exits"].is_null());
  EXPECT_TRUE(interpreted["phases"][0]["per_op"]["kvm_exits"].is_null());
  const std::string text = FormatRunReport(mips);
  EXPECT_EQ(text.find("kvm_exits"), std::string::npos) << text;
  EXPECT_EQ(text.find("KVM stats: none"), std::string::npos) << text;
}

// Where KVM's `exits` counts fewer than the VMM handled, it is left out: the phase has
// its reasons, and a null total.
TEST(KvmExitsReportTest, ALeftOutTotalIsNullAndSaidSo) {
  RunRecord record = PvmRun();
  record.result.kvm_stats["exits"] = 2;  // below the VMM's 5
  const nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(record).dump());
  EXPECT_TRUE(doc["phases"][0]["kvm_exits"]["total"].is_null());
  EXPECT_TRUE(doc["phases"][0]["per_op"]["kvm_exits"].is_null());
  EXPECT_EQ(doc["phases"][0]["per_op"]["kvm_exits_by_reason"]["insn_emulation_fail"], 7.0);
  const std::string text = FormatRunReport(record);
  EXPECT_NE(text.find("  kvm_exits                    not kept by this host's KVM"),
            std::string::npos)
      << text;
}

TEST(KvmExitsReportTest, JsonIsValidAgainstTheRunSchema) {
  std::ifstream file("docs/schema/sigvisor.run-2.schema.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json schema = nlohmann::json::parse(file);
  RunRecord none = PvmRun();
  none.result.kvm_stats.clear();
  none.result.phases[0].kvm_stats.clear();
  RunRecord left_out = PvmRun();
  left_out.result.kvm_stats["exits"] = 2;
  for (const RunRecord& record : {PvmRun(), none, left_out}) {
    nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(record).dump());
    // The CLI adds the binary's name (vmm/app/cli); the report alone has none.
    doc["sigvisor"] = {{"version", "1.0.0"}, {"commit", "unknown"}, {"tree_modified", nullptr}};
    for (const std::string& error : testing::ValidateJson(doc, schema)) ADD_FAILURE() << error;
  }
  // Not vacuous: a per-op figure that is no number.
  nlohmann::json bad = nlohmann::json::parse(RunRecordToJson(PvmRun()).dump());
  bad["sigvisor"] = {{"version", "1.0.0"}, {"commit", "unknown"}, {"tree_modified", nullptr}};
  bad["phases"][0]["per_op"]["kvm_exits_by_reason"]["insn_emulation"] = "many";
  EXPECT_FALSE(testing::ValidateJson(bad, schema).empty());
}

}  // namespace
}  // namespace sigvisor
