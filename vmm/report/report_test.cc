// The run reports (JSON and text) of phases whose time is not measured or whose
// clocks disagree.
// The reports first: <signal.h>, which gtest includes, defines si_addr as a macro,
// the name of an InjectionRecord field (so not in .clang-format's order).
// clang-format off
#include "vmm/report/json_report.h"
#include "vmm/report/text_report.h"
// clang-format on

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

// A PVM-like run: 5 io exits the VMM handled, which KVM's io_exits does not count,
// and one phase with a trapped DR7 write site.
RunRecord PvmRun() {
  RunRecord record;
  record.image = "kernel baseline (embedded)";
  record.host = {"pvm", true};
  record.trap = {TrapMechanism::kPatch, "--trap=auto on a pvm host: ...", 13};
  RunResult& result = record.result;
  result.outcome = Outcome::kExited;
  result.exit_code = 0;
  for (int i = 0; i < 5; ++i) result.ledger.Record(ExitKind::kIo, "port 0x501 out", 1000);
  result.traps.Record("dr_write", 0x1005cb, "do_signal+0x3b");
  result.traps.Record("dr_write", 0x1005cb, "do_signal+0x3b");
  result.kvm_stats = {{"exits", 40}, {"io_exits", 0}, {"insn_emulation", 3000}};
  result.first_hypercall_ns = 2'000'000;
  result.boot_kvm_stats = {{"exits", 4}, {"io_exits", 0}, {"insn_emulation", 1482}};
  PhaseResult phase;
  phase.name = "divzero";
  phase.ops = 2;
  phase.kvm_stats = {{"io_exits", 0}, {"insn_emulation", 1690}};
  phase.traps.by_kind = {{"dr_write", 2}};
  phase.traps.by_site = {{"do_signal+0x3b", 2}};
  result.phases.push_back(phase);
  return record;
}

TEST(RunReportTest, KvmStatisticsThisHostDoesNotKeepAreLeftOutAndSaidWhy) {
  const RunRecord record = PvmRun();
  const nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(record).dump());
  EXPECT_FALSE(doc["kvm_stats"].contains("io_exits")) << doc["kvm_stats"];
  EXPECT_EQ(doc["kvm_stats"]["exits"], 40);  // 40 >= the 5 the VMM saw: kept
  EXPECT_FALSE(doc["phases"][0]["kvm_stats"].contains("io_exits"));
  EXPECT_FALSE(doc["timing"]["boot_kvm_stats"].contains("io_exits"));
  ASSERT_EQ(doc["kvm_stats_left_out"].size(), 1u) << doc["kvm_stats_left_out"];
  EXPECT_EQ(doc["kvm_stats_left_out"][0]["name"], "io_exits");
  EXPECT_EQ(doc["kvm_stats_left_out"][0]["kvm"], 0);
  EXPECT_EQ(doc["kvm_stats_left_out"][0]["vmm"], 5);
  const std::string text = FormatRunReport(record);
  EXPECT_EQ(text.find("io_exits 0"), std::string::npos) << text;
  EXPECT_NE(text.find("not shown: io_exits is 0 where the VMM handled 5 io exits: this host's "
                      "KVM does not count them"),
            std::string::npos)
      << text;

  // Where KVM counts them (hardware), they stay.
  RunRecord hardware = PvmRun();
  hardware.result.kvm_stats["io_exits"] = 5;
  const nlohmann::json counted = nlohmann::json::parse(RunRecordToJson(hardware).dump());
  EXPECT_EQ(counted["kvm_stats"]["io_exits"], 5);
  EXPECT_TRUE(counted["kvm_stats_left_out"].empty());
}

TEST(RunReportTest, AGuestThatMakesNoHypercallHasNoBootTime) {
  RunRecord multiboot = PvmRun();
  multiboot.guest_makes_hypercalls = false;  // its first serial byte is no hypercall
  const nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(multiboot).dump());
  EXPECT_TRUE(doc["timing"]["boot_ns"].is_null());
  EXPECT_TRUE(doc["timing"]["boot_kvm_stats"].is_null());
  EXPECT_EQ(FormatRunReport(multiboot).find("boot"), std::string::npos)
      << FormatRunReport(multiboot);
  const std::string booted = FormatRunReport(PvmRun());
  EXPECT_NE(booted.find("boot 2.00 ms (to the first hypercall)"), std::string::npos) << booted;
  EXPECT_NE(booted.find("boot: 1482 guest kernel instructions"), std::string::npos) << booted;
}

TEST(RunReportTest, GuestMemorySaysWhatARestoredVmSharesWithItsSnapshot) {
  RunRecord booted = PvmRun();
  EXPECT_TRUE(nlohmann::json::parse(RunRecordToJson(booted).dump())["guest_memory"].is_null());
  EXPECT_EQ(FormatRunReport(booted).find("guest memory"), std::string::npos);
  booted.guest_memory = MemoryResidency{
      .mapped_bytes = 32 << 20, .resident_bytes = 3 << 20, .private_bytes = 3 << 20};
  EXPECT_NE(FormatRunReport(booted).find("  guest memory: 32 MiB, 3072 KiB resident\n"),
            std::string::npos)
      << FormatRunReport(booted);
  RunRecord restored = booted;
  restored.restored_from = "/tmp/linux.snap";
  restored.guest_memory->private_bytes = 1 << 20;
  const nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(restored).dump());
  EXPECT_EQ(doc["guest_memory"], nlohmann::json({{"mapped_bytes", 32 << 20},
                                                 {"resident_bytes", 3 << 20},
                                                 {"private_bytes", 1 << 20},
                                                 {"shared_bytes", 2 << 20}}));
  EXPECT_NE(FormatRunReport(restored).find(
                "guest memory: 32 MiB, 3072 KiB resident: 1024 KiB written by this VM, 2048 "
                "KiB read from the snapshot (shared with every restore of it)"),
            std::string::npos)
      << FormatRunReport(restored);
}

TEST(RunReportTest, BySiteHasOneShapeInTheRunAndInItsPhases) {
  const nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(PvmRun()).dump());
  const nlohmann::json row = {
      {"address", "0x1005cb"}, {"site", "do_signal+0x3b"}, {"kind", "dr_write"}, {"count", 2}};
  EXPECT_EQ(doc["traps"]["by_site"], nlohmann::json::array({row}));
  EXPECT_EQ(doc["phases"][0]["traps"]["by_site"], nlohmann::json::array({row}));
  EXPECT_EQ(doc["traps"]["reason"], "--trap=auto on a pvm host: ...");
  RunRecord off = PvmRun();
  off.trap = {TrapMechanism::kOff, "", 0};
  EXPECT_TRUE(nlohmann::json::parse(RunRecordToJson(off).dump())["traps"]["reason"].is_null());
}

// The record carries the mechanism; the reports name it, as --trap does.
TEST(RunReportTest, TheTrapMechanismIsNamedAsTheFlagNamesIt) {
  RunRecord patch = PvmRun();
  const std::string patched = FormatRunReport(patch);
  EXPECT_NE(patched.find("  trap mechanism: patch (13 sites); --trap=auto on a pvm host: ...\n"),
            std::string::npos)
      << patched;
  EXPECT_NE(patched.find("traps (patch)"), std::string::npos) << patched;
  EXPECT_EQ(patched.find("load hypercalls"), std::string::npos) << patched;
  const nlohmann::json patch_doc = nlohmann::json::parse(RunRecordToJson(patch).dump());
  EXPECT_EQ(patch_doc["trap_mechanism"], "patch");
  EXPECT_EQ(patch_doc["traps"]["mechanism"], "patch");

  RunRecord pv = PvmRun();
  pv.trap = {TrapMechanism::kPv, "--trap=pv covers ...", 0};
  const std::string paravirtual = FormatRunReport(pv);
  EXPECT_NE(paravirtual.find("  trap mechanism: pv (nothing patched: the kernel counts in the pv "
                             "page); --trap=pv covers ...\n"),
            std::string::npos)
      << paravirtual;
  EXPECT_NE(paravirtual.find("load hypercalls"), std::string::npos) << paravirtual;
  EXPECT_EQ(nlohmann::json::parse(RunRecordToJson(pv).dump())["trap_mechanism"], "pv");

  RunRecord hw_gd = PvmRun();
  hw_gd.trap = {TrapMechanism::kHwGd, "", 13};
  EXPECT_NE(FormatRunReport(hw_gd).find("  trap mechanism: hw-gd (13 sites)\n"), std::string::npos);

  RunRecord off = PvmRun();
  off.trap = {TrapMechanism::kOff, "", 0};
  const std::string untrapped = FormatRunReport(off);
  EXPECT_NE(untrapped.find("  trap mechanism: off\n"), std::string::npos) << untrapped;
  EXPECT_EQ(untrapped.find("traps ("), std::string::npos) << untrapped;
  EXPECT_EQ(nlohmann::json::parse(RunRecordToJson(off).dump())["traps"]["mechanism"], "off");
}

TEST(RunReportTest, TheMipsInterpretersCountersAreNotKvmStatistics) {
  RunRecord mips;
  mips.image = "kernel baseline (embedded, mips)";
  mips.host = {kMipsInterpreterHost, false};
  mips.stats_source = StatsSource::kMipsInterpreter;
  mips.result.outcome = Outcome::kExited;
  mips.result.exit_code = 0;
  mips.result.kvm_stats = {{"instructions", 29616}, {"mmio_exits", 27}, {"modelled_cycles", 30506}};
  mips.result.first_hypercall_ns = 100;
  mips.result.boot_kvm_stats = {{"instructions", 10476}};
  PhaseResult phase;
  phase.name = "sig_hndl";
  phase.ops = 2;
  phase.kvm_stats = {{"instructions", 3412}, {"modelled_cycles", 3512}};
  mips.result.phases.push_back(phase);
  const nlohmann::json doc = nlohmann::json::parse(RunRecordToJson(mips).dump());
  EXPECT_EQ(doc["host"]["kind"], "mips-interpreter");
  EXPECT_TRUE(doc["host"]["cpl0_emulated"].is_null());
  EXPECT_TRUE(doc["kvm_stats"].is_null());
  EXPECT_EQ(doc["interpreter_stats"]["instructions"], 29616);
  EXPECT_TRUE(doc["phases"][0]["kvm_stats"].is_null());
  EXPECT_EQ(doc["phases"][0]["interpreter_stats"]["instructions"], 3412);
  EXPECT_TRUE(doc["timing"]["boot_kvm_stats"].is_null());
  EXPECT_EQ(doc["timing"]["boot_interpreter_stats"]["instructions"], 10476);
  EXPECT_TRUE(doc["kvm_stats_left_out"].empty());
  const std::string text = FormatRunReport(mips);
  EXPECT_NE(text.find("interpreter stats (whole run):"), std::string::npos) << text;
  EXPECT_EQ(text.find("KVM stats"), std::string::npos) << text;
}

}  // namespace
}  // namespace sigvisor
