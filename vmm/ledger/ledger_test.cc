#include <gtest/gtest.h>

#include "vmm/ledger/exit_ledger.h"
#include "vmm/ledger/phase_tracker.h"

namespace sigvisor {
namespace {

TEST(ExitLedgerTest, AggregatesByReasonAndDetail) {
  ExitLedger ledger;
  ledger.Record("io", "port 0x501", 100);
  ledger.Record("io", "port 0x501", 300);
  ledger.Record("io", "port 0x3f8", 50);
  ledger.Record("hlt", "", 7);
  EXPECT_EQ(ledger.total(), 4u);
  const LatencyStats& io = ledger.by_reason().at("io");
  EXPECT_EQ(io.count, 3u);
  EXPECT_EQ(io.sum_ns, 450u);
  EXPECT_EQ(io.min_ns, 50u);
  EXPECT_EQ(io.max_ns, 300u);
  EXPECT_EQ(io.mean_ns(), 150u);
  EXPECT_EQ(ledger.by_detail().at({"io", "port 0x501"}).count, 2u);
  EXPECT_EQ(ledger.Counts(), (ExitCounts{{"hlt", 1}, {"io", 3}}));
}

TEST(ExitLedgerTest, EmptyLatencyReportsZeroMin) {
  LatencyStats empty;
  EXPECT_EQ(empty.min_or_zero_ns(), 0u);
  EXPECT_EQ(empty.mean_ns(), 0u);
}

TEST(ExitCountsTest, SubtractAndSum) {
  ExitCounts before = {{"io", 2}};
  ExitCounts after = {{"io", 5}, {"mmio", 1}};
  EXPECT_EQ(Subtract(after, before), (ExitCounts{{"io", 3}, {"mmio", 1}}));
  EXPECT_EQ(Sum(after), 6u);
}

TEST(PhaseTrackerTest, DeltasExcludeTheEndMarker) {
  PhaseTracker tracker;
  PhaseSample begin{{{"io", 10}}, {{"exits", 10}, {"io_exits", 10}, {"insn_emulation", 500}},
                    1000, 2000};
  ASSERT_TRUE(tracker.Begin("getpid", 4, begin).ok());
  // Four console hypercalls in the phase; KVM has also counted the END exit.
  PhaseSample end{{{"io", 14}}, {{"exits", 15}, {"io_exits", 15}, {"insn_emulation", 900}},
                  5000, 10000};
  ASSERT_TRUE(tracker.End(end).ok());
  ASSERT_EQ(tracker.results().size(), 1u);
  const PhaseResult& r = tracker.results()[0];
  EXPECT_EQ(r.name, "getpid");
  EXPECT_EQ(r.ops, 4u);
  EXPECT_EQ(r.exits_total, 4u);
  EXPECT_EQ(r.kvm_stats.at("exits"), 4u);
  EXPECT_EQ(r.kvm_stats.at("io_exits"), 4u);
  EXPECT_EQ(r.kvm_stats.at("insn_emulation"), 400u);
  EXPECT_EQ(r.wall_ns, 4000u);
  EXPECT_EQ(r.tsc_cycles, 8000u);
}

TEST(PhaseTrackerTest, CalibrationIsSubtractedFromTheNextPhases) {
  PhaseTracker tracker;
  ASSERT_TRUE(tracker.Begin("work", 0, PhaseSample{{}, {{"insn_emulation", 100}}, 0, 0}, true).ok());
  ASSERT_TRUE(tracker.End(PhaseSample{{}, {{"insn_emulation", 130}}, 50, 70}).ok());
  EXPECT_TRUE(tracker.results().empty());  // calibration phases are not reported
  for (uint64_t ops : {10, 20}) {
    // 7 instructions per op plus the same 30-instruction marker overhead.
    ASSERT_TRUE(tracker.Begin("work", ops, PhaseSample{{}, {{"insn_emulation", 1000}}, 0, 0}).ok());
    ASSERT_TRUE(tracker.End(PhaseSample{{{"io", 1}}, {{"insn_emulation", 1030 + 7 * ops}},
                                        1000, 2000})
                    .ok());
    const PhaseResult& r = tracker.results().back();
    EXPECT_EQ(r.kvm_stats.at("insn_emulation"), 7 * ops);
    EXPECT_EQ(r.wall_ns, 950u);
    EXPECT_EQ(r.tsc_cycles, 1930u);
    EXPECT_EQ(r.exits_total, 1u);
    ASSERT_TRUE(r.marker_overhead.has_value());
    EXPECT_EQ(r.marker_overhead->kvm_stats.at("insn_emulation"), 30u);
  }
}

TEST(PhaseTrackerTest, NetValuesNeverWrap) {
  EXPECT_EQ(SaturatingSubtract(3, 5), 0u);
  EXPECT_EQ(SaturatingSubtract(5, 3), 2u);
}

TEST(PhaseTrackerTest, RefusesNestingAndStrayEnd) {
  PhaseTracker tracker;
  EXPECT_FALSE(tracker.End(PhaseSample{}).ok());
  ASSERT_TRUE(tracker.Begin("a", 1, PhaseSample{}).ok());
  absl::Status nested = tracker.Begin("b", 1, PhaseSample{});
  EXPECT_FALSE(nested.ok());
  EXPECT_NE(nested.message().find("'a'"), std::string::npos);
  EXPECT_TRUE(tracker.open());
}

}  // namespace
}  // namespace sigvisor
