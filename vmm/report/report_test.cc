// The run reports (JSON and text) of phases whose time is not measured or whose
// clocks disagree.
// The reports first: <signal.h>, which gtest includes, defines si_addr as a macro,
// the name of an InjectionRecord field.
#include "vmm/report/json_report.h"
#include "vmm/report/text_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sigvisor {
namespace {

// A run of two phases through a real tracker: "swallowed", whose single
// calibration cost more than the phase, and "skewed", whose two clocks tell
// different times at 2.6 GHz.
RunRecord TwoPhaseRun() {
  PhaseTracker tracker(2'600'000);
  auto phase = [&](const char* name, bool calibration, PhaseSample begin, PhaseSample end) {
    EXPECT_TRUE(tracker.Begin(name, calibration ? 0 : 4, begin, calibration).ok());
    EXPECT_TRUE(tracker.End(end).ok());
  };
  phase("swallowed", true, {{}, {{"insn_emulation", 0}}, 0, 0},
        {{}, {{"insn_emulation", 155}}, 8'500'000, 22'100'000});
  phase("swallowed", false, {{}, {{"insn_emulation", 0}}, 0, 0},
        {{}, {{"insn_emulation", 695}}, 700'000, 1'820'000});
  phase("skewed", true, {{}, {{"insn_emulation", 0}}, 0, 0},
        {{}, {{"insn_emulation", 155}}, 180'000, 468'000});
  phase("skewed", false, {{}, {{"insn_emulation", 0}}, 0, 0},
        {{}, {{"insn_emulation", 695}}, 9'306'548, 2'857'892});
  RunRecord record;
  record.image = "kernel baseline (embedded)";
  record.host = {"pvm", true};
  record.result.outcome = Outcome::kExited;
  record.result.exit_code = 0;
  record.result.phases = tracker.results();
  for (const PhaseResult& p : tracker.results()) {
    for (const std::string& w : p.time_warnings) record.result.warnings.push_back(w);
  }
  return record;
}

TEST(RunReportTest, JsonGivesNoTimeWhereTheCalibrationSwallowedThePhase) {
  const nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(TwoPhaseRun()).dump());
  ASSERT_EQ(doc["phases"].size(), 2u);
  const nlohmann::json& swallowed = doc["phases"][0];
  EXPECT_TRUE(swallowed["wall_ns"].is_null());
  EXPECT_TRUE(swallowed["tsc_cycles"].is_null());
  EXPECT_TRUE(swallowed["per_op"]["ns"].is_null());
  EXPECT_TRUE(swallowed["per_op"]["tsc_cycles"].is_null());
  EXPECT_EQ(swallowed["time_status"], "below_calibration_noise");
  EXPECT_TRUE(swallowed["clocks_agree"].is_null());
  EXPECT_EQ(swallowed["per_op"]["kernel_insns"], 135.0);  // the counts are as exact as ever
  EXPECT_EQ(swallowed["marker_overhead"]["samples"], 1);
  const nlohmann::json& skewed = doc["phases"][1];
  EXPECT_EQ(skewed["time_status"], "measured");
  EXPECT_TRUE(skewed["per_op"]["ns"].is_number());
  EXPECT_EQ(skewed["clocks_agree"], false);
  ASSERT_EQ(doc["warnings"].size(), 2u);
  EXPECT_NE(doc["warnings"][0].get<std::string>().find(
                "phase 'swallowed': time not measured: below the marker calibration's noise"),
            std::string::npos);
  EXPECT_NE(doc["warnings"][1].get<std::string>().find(
                "phase 'skewed': ns and tsc_cycles disagree beyond the TSC rate"),
            std::string::npos);
}

TEST(RunReportTest, TextSaysWhatTheJsonSays) {
  const std::string text = FormatRunReport(TwoPhaseRun());
  EXPECT_NE(text.find("  tsc_cycles                   not measured: below the marker "
                      "calibration's noise\n"
                      "  ns                           not measured: below the marker "
                      "calibration's noise\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  clocks                       ns and tsc_cycles disagree beyond the TSC "
                      "rate (see the warning)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("warning: phase 'swallowed': time not measured"), std::string::npos) << text;
  EXPECT_NE(text.find("warning: phase 'skewed': ns and tsc_cycles disagree"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace sigvisor
