// The spread of repeated phases, and how the run reports show it: fixed samples,
// exact figures.
// The reports first: <signal.h>, which gtest includes, defines si_addr as a macro,
// the name of an InjectionRecord field (so not in .clang-format's order).
// clang-format off
#include "vmm/report/json_report.h"
#include "vmm/report/phase_spread.h"
#include "vmm/report/text_report.h"
// clang-format on

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "vmm/report/testing/json_schema.h"

namespace sigvisor {
namespace {

PhaseResult Sample(const std::string& name, uint64_t ops, uint64_t insns, uint64_t exits = 0,
                   uint64_t ns = 0, uint64_t tsc = 0) {
  PhaseResult phase;
  phase.name = name;
  phase.ops = ops;
  phase.exits_total = exits;
  phase.kvm_stats = {{"insn_emulation", insns}};
  if (ns == 0) {
    phase.time = PhaseTime::kBelowCalibrationNoise;
  } else {
    phase.wall_ns = ns;
    phase.tsc_cycles = tsc;
  }
  return phase;
}

void ExpectSpread(const std::optional<SampleSpread>& spread, double min, double median,
                  double max, uint64_t samples) {
  ASSERT_TRUE(spread.has_value());
  EXPECT_EQ(spread->min, min);
  EXPECT_EQ(spread->median, median);
  EXPECT_EQ(spread->max, max);
  EXPECT_EQ(spread->samples, samples);
}

TEST(SpreadOfTest, OddAndEvenCounts) {
  EXPECT_FALSE(SpreadOf({}).has_value());
  ExpectSpread(SpreadOf({7}), 7, 7, 7, 1);
  ExpectSpread(SpreadOf({9, 1, 5}), 1, 5, 9, 3);
  ExpectSpread(SpreadOf({4, 10, 1, 6}), 1, 5, 10, 4);  // the two middle values' mean
}

TEST(PhaseSpreadTest, OnlyRepeatedNamesInFirstAppearanceOrder) {
  const std::vector<PhaseResult> phases = {
      Sample("divzero", 8, 24'000), Sample("single", 8, 100),   Sample("pipe_rw", 4, 400),
      Sample("divzero", 8, 22'488), Sample("pipe_rw", 4, 4'000), Sample("divzero", 8, 30'000),
  };
  const std::vector<PhaseSpread> spreads = SpreadOfRepeatedPhases(phases, true);
  ASSERT_EQ(spreads.size(), 2u);
  EXPECT_EQ(spreads[0].name, "divzero");
  EXPECT_EQ(spreads[0].samples, 3u);
  EXPECT_EQ(spreads[0].ops, 24u);
  ExpectSpread(spreads[0].kernel_insns, 2811, 3000, 3750, 3);
  ExpectSpread(spreads[0].exits, 0, 0, 0, 3);
  EXPECT_EQ(spreads[1].name, "pipe_rw");
  ExpectSpread(spreads[1].kernel_insns, 100, 550, 1000, 2);
  EXPECT_TRUE(SpreadOfRepeatedPhases({Sample("a", 1, 1), Sample("b", 1, 1)}, true).empty());
}

TEST(PhaseSpreadTest, KernelInstructionsOnlyWhereCpl0IsEmulated) {
  const std::vector<PhaseResult> phases = {Sample("d", 2, 10, 4), Sample("d", 2, 20, 6)};
  const std::vector<PhaseSpread> spreads = SpreadOfRepeatedPhases(phases, false);
  ASSERT_EQ(spreads.size(), 1u);
  EXPECT_FALSE(spreads[0].kernel_insns.has_value());
  ExpectSpread(spreads[0].exits, 2, 2.5, 3, 2);
}

TEST(PhaseSpreadTest, TimesOverMeasuredSamplesAndNoPerOpForZeroOps) {
  const std::vector<PhaseResult> phases = {
      Sample("d", 4, 40, 0, 4'000, 10'400), Sample("d", 4, 48, 0, 0, 0),  // not measured
      Sample("d", 4, 44, 0, 6'000, 15'600), Sample("d", 0, 5, 0, 100, 260),  // no ops
  };
  const std::vector<PhaseSpread> spreads = SpreadOfRepeatedPhases(phases, true);
  ASSERT_EQ(spreads.size(), 1u);
  EXPECT_EQ(spreads[0].samples, 4u);
  EXPECT_EQ(spreads[0].ops, 12u);
  ExpectSpread(spreads[0].kernel_insns, 10, 11, 12, 3);
  ExpectSpread(spreads[0].ns, 1'000, 1'250, 1'500, 2);
  ExpectSpread(spreads[0].tsc_cycles, 2'600, 3'250, 3'900, 2);
  EXPECT_FALSE(
      SpreadOfRepeatedPhases({Sample("d", 1, 1), Sample("d", 1, 1)}, true)[0].ns.has_value());
}

RunRecord PvmRun(std::vector<PhaseResult> phases) {
  RunRecord record;
  record.image = "vmlinuz";
  record.host = {"pvm", true};
  record.result.outcome = Outcome::kExited;
  record.result.phases = std::move(phases);
  return record;
}

TEST(PhaseSpreadReportTest, TextGivesOneBlockPerRepeatedName) {
  const std::string text = FormatRunReport(PvmRun({
      Sample("divzero", 8, 24'000, 0, 80'000, 208'000),
      Sample("divzero", 8, 22'488, 0, 0, 0),
      Sample("divzero", 8, 30'000, 0, 96'000, 249'600),
      Sample("pipe_rw", 4, 400, 0, 4'000, 10'400),
  }));
  const std::string want =
      "\nspread of phase divzero (3 samples, 24 ops)\n"
      "  per op                                  min         median            max\n"
      "  exits                                  0.00           0.00           0.00\n"
      "  kernel_insns                        2811.00        3000.00        3750.00\n"
      "  tsc_cycles                         26000.00       28600.00       31200.00  (2 of 3 "
      "samples)\n"
      "  ns                                 10000.00       11000.00       12000.00  (2 of 3 "
      "samples)\n";
  EXPECT_NE(text.find(want), std::string::npos) << text;
  EXPECT_EQ(text.find("spread of phase pipe_rw"), std::string::npos) << text;
}

TEST(PhaseSpreadReportTest, JsonOnlyWhereANameRepeats) {
  const nlohmann::json single =
      nlohmann::json::parse(RunRecordToJson(PvmRun({Sample("a", 1, 1)})).dump());
  EXPECT_FALSE(single.contains("phase_spread"));
  EXPECT_EQ(FormatRunReport(PvmRun({Sample("a", 1, 1)})).find("spread"), std::string::npos);

  const nlohmann::json doc = nlohmann::json::parse(
      RunRecordToJson(PvmRun({Sample("d", 2, 10, 2), Sample("d", 2, 30, 4)})).dump());
  ASSERT_EQ(doc["phase_spread"].size(), 1u);
  const nlohmann::json& spread = doc["phase_spread"][0];
  EXPECT_EQ(spread["name"], "d");
  EXPECT_EQ(spread["samples"], 2);
  EXPECT_EQ(spread["ops"], 4);
  EXPECT_EQ(spread["per_op"]["kernel_insns"],
            nlohmann::json({{"min", 5.0}, {"median", 10.0}, {"max", 15.0}, {"samples", 2}}));
  EXPECT_EQ(spread["per_op"]["exits"],
            nlohmann::json({{"min", 1.0}, {"median", 1.5}, {"max", 2.0}, {"samples", 2}}));
  EXPECT_TRUE(spread["per_op"]["ns"].is_null());
  EXPECT_TRUE(spread["per_op"]["tsc_cycles"].is_null());
}

// The run's schema (docs/schema) takes the spread, with and without its figures.
TEST(PhaseSpreadReportTest, JsonIsValidAgainstTheRunSchema) {
  std::ifstream file("docs/schema/sigvisor.run-2.schema.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json schema = nlohmann::json::parse(file);
  nlohmann::json doc = nlohmann::json::parse(
      RunRecordToJson(PvmRun({Sample("d", 2, 10, 2, 5'000, 13'000), Sample("d", 2, 30, 4),
                              Sample("e", 0, 1), Sample("e", 0, 1)}))
          .dump());
  // The CLI adds the binary's name (vmm/app/cli); the report alone has none.
  doc["sigvisor"] = {{"version", "1.0.0"}, {"commit", "unknown"}, {"tree_modified", nullptr}};
  ASSERT_EQ(doc["phase_spread"].size(), 2u);
  EXPECT_TRUE(doc["phase_spread"][1]["per_op"]["exits"].is_null());  // no ops: no per-op figure
  for (const std::string& error : testing::ValidateJson(doc, schema)) ADD_FAILURE() << error;
}

}  // namespace
}  // namespace sigvisor
