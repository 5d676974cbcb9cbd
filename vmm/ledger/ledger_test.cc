#include <gtest/gtest.h>

#include "vmm/ledger/exit_ledger.h"
#include "vmm/ledger/phase_tracker.h"
#include "vmm/ledger/trap_ledger.h"

namespace sigvisor {
namespace {

TEST(ExitLedgerTest, AggregatesByReasonAndDetail) {
  ExitLedger ledger;
  ledger.Record(ExitKind::kIo, "port 0x501", 100);
  ledger.Record(ExitKind::kIo, "port 0x501", 300);
  ledger.Record(ExitKind::kIo, "port 0x3f8", 50);
  ledger.Record(ExitKind::kHalt, "", 7);
  EXPECT_EQ(ledger.total(), 4u);
  const LatencyStats io = ledger.by_reason().at("io");
  EXPECT_EQ(io.count, 3u);
  EXPECT_EQ(io.sum_ns, 450u);
  EXPECT_EQ(io.min_ns, 50u);
  EXPECT_EQ(io.max_ns, 300u);
  EXPECT_EQ(io.mean_ns(), 150u);
  EXPECT_EQ(ledger.by_detail().at({"io", "port 0x501"}).count, 2u);
  EXPECT_EQ(ledger.Counts(), (ExitCounts{{"hlt", 1}, {"io", 3}}));
}

ExitKey Access(ExitKind kind, uint64_t address, bool is_write) {
  return ExitKey{.kind = kind, .detail = ExitKey::Detail::kAccess, .is_write = is_write,
                 .value = address};
}

TEST(ExitLedgerTest, TypedKeysAreNamedOnlyWhenAsked) {
  ExitLedger ledger;
  ledger.Record(Access(ExitKind::kIo, 0x3f8, true), 10);
  ledger.Record(Access(ExitKind::kIo, 0x3f8, true), 30);
  ledger.Record(Access(ExitKind::kIo, 0x3fd, false), 5);
  ledger.Record(Access(ExitKind::kMmio, 0x1f100008, true), 7);
  ledger.Record(ExitKey{.kind = ExitKind::kInternalError, .detail = ExitKey::Detail::kSuberror,
                        .value = 1},
                2);
  int asked = 0;
  ledger.NameAccesses([&](const ExitKey& key) {
    ++asked;
    return key.kind == ExitKind::kMmio ? std::string("hypercall exit") : std::string("serial");
  });
  EXPECT_EQ(asked, 3);  // once per distinct access
  const auto details = ledger.by_detail();
  EXPECT_EQ(details.at({"io", "port 0x3f8 out (serial)"}).count, 2u);
  EXPECT_EQ(details.at({"io", "port 0x3f8 out (serial)"}).sum_ns, 40u);
  EXPECT_EQ(details.at({"io", "port 0x3fd in (serial)"}).count, 1u);
  EXPECT_EQ(details.at({"mmio", "mmio 0x1f100008 write (hypercall exit)"}).count, 1u);
  EXPECT_EQ(details.at({"internal_error", "suberror 1"}).count, 1u);
  EXPECT_EQ(ledger.Counts(), (ExitCounts{{"internal_error", 1}, {"io", 3}, {"mmio", 1}}));
}

TEST(ExitLedgerTest, AnMsrAccessIsNamedByItsIndex) {
  ExitLedger ledger;
  ledger.Record(Access(ExitKind::kMsr, 0x830, true), 9);
  ledger.NameAccesses([](const ExitKey&) { return std::string("x2apic ICR"); });
  EXPECT_EQ(ledger.by_detail().at({"msr", "msr 0x830 write (x2apic ICR)"}).count, 1u);
}

TEST(ExitLedgerTest, MergeJoinsRowsByKeyAndText) {
  ExitLedger a, b;
  a.Record(ExitKind::kHalt, "trap dr_write", 1);
  a.Record(ExitKind::kInterrupted, "watchdog", 1);
  b.Record(ExitKind::kHalt, "trap segment_load", 2);
  b.Record(ExitKind::kHalt, "trap dr_write", 3);
  b.Record(Access(ExitKind::kIo, 0xf4, true), 4);
  b.NameAccesses([](const ExitKey&) { return std::string("debug-exit"); });
  a.Merge(b);
  EXPECT_EQ(a.total(), 5u);
  const auto details = a.by_detail();
  EXPECT_EQ(details.at({"hlt", "trap dr_write"}).count, 2u);
  EXPECT_EQ(details.at({"hlt", "trap segment_load"}).count, 1u);
  EXPECT_EQ(details.at({"interrupted", "watchdog"}).count, 1u);
  EXPECT_EQ(details.at({"io", "port 0xf4 out (debug-exit)"}).count, 1u);
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

// A run of calibration phases, each costing `insns` kernel instructions and the
// given times.
void Calibrate(PhaseTracker& tracker, const std::vector<std::pair<uint64_t, uint64_t>>& times,
               uint64_t insns = 30) {
  for (const auto& [wall_ns, tsc_cycles] : times) {
    ASSERT_TRUE(tracker.Begin("work", 0, PhaseSample{{}, {{"insn_emulation", 100}}, 0, 0}, true).ok());
    ASSERT_TRUE(
        tracker.End(PhaseSample{{}, {{"insn_emulation", 100 + insns}}, wall_ns, tsc_cycles}).ok());
  }
}

// A phase of `ops` ops of 7 instructions each plus the markers' 30, taking the given
// times between its markers.
const PhaseResult& Measure(PhaseTracker& tracker, uint64_t ops, uint64_t wall_ns,
                           uint64_t tsc_cycles) {
  EXPECT_TRUE(tracker.Begin("work", ops, PhaseSample{{}, {{"insn_emulation", 1000}}, 0, 0}).ok());
  EXPECT_TRUE(tracker.End(PhaseSample{{}, {{"insn_emulation", 1030 + 7 * ops}}, wall_ns, tsc_cycles})
                  .ok());
  return tracker.results().back();
}

// vCPU `vcpu` at a boundary: `mmio` exits so far, and KVM's counts of it.
VcpuSample Ap(int vcpu, uint64_t mmio, uint64_t halt_exits, uint64_t irq_injections) {
  VcpuSample sample{vcpu, {}, {{"halt_exits", halt_exits}, {"irq_injections", irq_injections}}};
  if (mmio) sample.exits["mmio"] = mmio;
  return sample;
}

PhaseSample WithAps(uint64_t insns, std::vector<VcpuSample> aps) {
  PhaseSample sample{{}, {{"insn_emulation", insns}}, 0, 0};
  sample.other_vcpus = std::move(aps);
  return sample;
}

TEST(PhaseTrackerTest, OtherVcpusArePerPhaseAndNetOfTheCalibration) {
  PhaseTracker tracker;
  // While vCPU 0 calibrates, vCPU 1 took one interrupt and halted once (its idle
  // loop); vCPU 2 did nothing.
  ASSERT_TRUE(tracker.Begin("work", 0, WithAps(100, {Ap(1, 0, 5, 5), Ap(2, 0, 0, 0)}), true).ok());
  ASSERT_TRUE(tracker.End(WithAps(130, {Ap(1, 0, 6, 6), Ap(2, 0, 0, 0)})).ok());
  // 10 ops: vCPU 1 takes 2 IPIs an op and halts after each, vCPU 2 one MMIO exit.
  ASSERT_TRUE(tracker.Begin("work", 10, WithAps(1000, {Ap(1, 3, 10, 10), Ap(2, 0, 0, 0)})).ok());
  ASSERT_TRUE(tracker.End(WithAps(1100, {Ap(1, 3, 31, 31), Ap(2, 1, 0, 0)})).ok());
  const PhaseResult& r = tracker.results().back();
  ASSERT_EQ(r.other_vcpus.size(), 2u);
  EXPECT_EQ(r.other_vcpus[0].vcpu, 1);
  EXPECT_EQ(r.other_vcpus[0].kvm_stats.at("irq_injections"), 20u);
  EXPECT_EQ(r.other_vcpus[0].kvm_stats.at("halt_exits"), 20u);
  EXPECT_TRUE(r.other_vcpus[0].exits.empty());
  EXPECT_EQ(r.other_vcpus[1].vcpu, 2);
  EXPECT_EQ(r.other_vcpus[1].exits.at("mmio"), 1u);
  EXPECT_EQ(r.kvm_stats.at("insn_emulation"), 70u);  // vCPU 0's, as before
}

TEST(PhaseTrackerTest, AVcpuMissingAtOneBoundaryIsLeftOut) {
  PhaseTracker tracker;
  ASSERT_TRUE(tracker.Begin("work", 1, WithAps(0, {Ap(1, 0, 0, 0)})).ok());
  ASSERT_TRUE(tracker.End(WithAps(0, {Ap(1, 0, 2, 2), Ap(2, 1, 0, 0)})).ok());
  ASSERT_EQ(tracker.results().back().other_vcpus.size(), 1u);
  EXPECT_EQ(tracker.results().back().other_vcpus[0].vcpu, 1);
}

// The guest's own IPI counts: each CPU's difference between its markers; none where a
// marker had none (a uniprocessor kernel) or the two disagree on the CPUs.
TEST(PhaseTrackerTest, GuestIpisAreTheMarkersDifferencePerCpu) {
  PhaseTracker tracker;
  PhaseSample begin, end;
  begin.guest_ipis = {{.sent = 2, .received = 2}, {.sent = 2, .received = 2}};
  end.guest_ipis = {{.sent = 12, .received = 12}, {.sent = 12, .received = 11}};
  ASSERT_TRUE(tracker.Begin("xcpu", 10, begin).ok());
  ASSERT_TRUE(tracker.End(end).ok());
  EXPECT_EQ(tracker.results().back().guest_ipis,
            (GuestIpiCounts{{.sent = 10, .received = 10}, {.sent = 10, .received = 9}}));
  ASSERT_TRUE(tracker.Begin("up", 1, PhaseSample()).ok());
  ASSERT_TRUE(tracker.End(PhaseSample()).ok());
  EXPECT_TRUE(tracker.results().back().guest_ipis.empty());
  EXPECT_TRUE(SubtractGuestIpis(end.guest_ipis, {{}}).empty());
}

TEST(LatencyStatsTest, Log2BucketsHoldEachTimeOnce) {
  EXPECT_EQ(LatencyBucket(0), 0u);
  EXPECT_EQ(LatencyBucket(1), 1u);
  EXPECT_EQ(LatencyBucket(1023), 10u);  // [512, 1024)
  EXPECT_EQ(LatencyBucket(1024), 11u);
  EXPECT_EQ(LatencyBucket(~uint64_t{0}), kLatencyBuckets - 1);
  for (size_t b = 0; b + 1 < kLatencyBuckets; ++b) {
    EXPECT_EQ(LatencyBucket(LatencyBucketLow(b)), b);
    EXPECT_EQ(LatencyBucket(LatencyBucketHigh(b) - 1), b);
  }
  LatencyStats stats;
  for (uint64_t ns : {700, 900, 5000}) stats.Add(ns);
  EXPECT_EQ(stats.buckets[10], 2u);
  EXPECT_EQ(stats.buckets[13], 1u);  // [4096, 8192)
  LatencyStats other;
  other.Add(800);
  stats.Merge(other);
  EXPECT_EQ(stats.buckets[10], 3u);
}

TEST(PhaseTrackerTest, ExitLatencyIsAHistogramOfThePhasesExits) {
  PhaseTracker tracker;
  LatencyStats io;
  io.Add(9000);  // before the phase
  PhaseSample begin{{{"io", 1}}, {}, 0, 0};
  begin.exit_latency["io"] = io;
  ASSERT_TRUE(tracker.Begin("work", 3, begin).ok());
  for (uint64_t ns : {700, 900, 5000}) io.Add(ns);
  LatencyStats hlt;
  hlt.Add(3);
  PhaseSample end{{{"io", 4}, {"hlt", 1}}, {}, 10, 10};
  end.exit_latency["io"] = io;
  end.exit_latency["hlt"] = hlt;  // a reason first seen in the phase
  ASSERT_TRUE(tracker.End(end).ok());
  const PhaseResult& r = tracker.results().back();
  ASSERT_EQ(r.exit_latency.size(), 2u);
  const LatencyHistogram& phase_io = r.exit_latency.at("io");
  EXPECT_EQ(phase_io.count, 3u);
  EXPECT_EQ(phase_io.sum_ns, 6600u);
  EXPECT_EQ(phase_io.buckets[10], 2u);
  EXPECT_EQ(phase_io.buckets[13], 1u);
  EXPECT_EQ(phase_io.buckets[14], 0u);  // the 9 us exit was before BEGIN
  EXPECT_EQ(r.exit_latency.at("hlt").buckets[2], 1u);
}

TEST(PhaseTrackerTest, OneSlowedCalibrationDoesNotDecide) {
  PhaseTracker tracker;
  // The host preempted the VMM during the last calibration: it took 40 times longer.
  Calibrate(tracker, {{100, 200}, {104, 210}, {4000, 8000}});
  const PhaseResult& r = Measure(tracker, 4, 1000, 2000);
  EXPECT_EQ(r.kvm_stats.at("insn_emulation"), 28u);  // the counts are exact as ever
  EXPECT_EQ(r.wall_ns, 900u);                         // net of the fastest calibration
  EXPECT_EQ(r.tsc_cycles, 1800u);
}

TEST(PhaseTrackerTest, TheCalibrationsNoiseIsTheirMedianAboveTheirFastest) {
  PhaseTracker tracker;
  Calibrate(tracker, {{100, 200}, {104, 210}, {4000, 8000}});
  const PhaseResult& r = Measure(tracker, 4, 1000, 2000);
  EXPECT_TRUE(r.time_measured());
  ASSERT_TRUE(r.calibration_noise.has_value());
  EXPECT_EQ(r.calibration_noise->samples, 3u);
  EXPECT_EQ(r.calibration_noise->wall_ns, 4u);  // the median sample above the fastest
  EXPECT_EQ(r.calibration_noise->tsc_cycles, 10u);
  EXPECT_TRUE(r.time_warnings.empty());
}

TEST(PhaseTrackerTest, ACalibrationCostlierThanThePhaseLeavesItsTimeUnmeasured) {
  PhaseTracker tracker;
  Calibrate(tracker, {{8'500'000, 22'100'000}});  // a single calibration, slowed
  const PhaseResult& r = Measure(tracker, 4, 700'000, 1'820'000);
  EXPECT_EQ(r.time, PhaseTime::kBelowCalibrationNoise);
  EXPECT_FALSE(r.MeasuredWallNs().has_value());
  EXPECT_FALSE(r.MeasuredTscCycles().has_value());
  EXPECT_EQ(r.kvm_stats.at("insn_emulation"), 28u);  // counts are still exact
  ASSERT_EQ(r.time_warnings.size(), 1u);
  EXPECT_NE(r.time_warnings[0].find("phase 'work': time not measured: below the marker "
                                    "calibration's noise"),
            std::string::npos)
      << r.time_warnings[0];
  EXPECT_NE(r.time_warnings[0].find("8500.0 us"), std::string::npos) << r.time_warnings[0];
  EXPECT_FALSE(r.clocks_agree.has_value());
}

TEST(PhaseTrackerTest, ATimeWithinTheCalibrationsSpreadIsNotMeasured) {
  PhaseTracker tracker;
  // The markers cost 100 to 200 ns: their median is 30 ns above their fastest.
  Calibrate(tracker, {{100, 1000}, {130, 1000}, {200, 1000}, {120, 1000}, {150, 1000}});
  EXPECT_EQ(Measure(tracker, 4, 125, 5000).time, PhaseTime::kBelowCalibrationNoise);
  EXPECT_EQ(Measure(tracker, 4, 130, 5000).time, PhaseTime::kBelowCalibrationNoise);
  const PhaseResult& above = Measure(tracker, 4, 145, 5000);
  EXPECT_EQ(above.time, PhaseTime::kMeasured);
  EXPECT_EQ(above.MeasuredWallNs(), std::optional<uint64_t>(45));
  // A single calibration says nothing of its spread: the phase must be twice it.
  PhaseTracker once;
  Calibrate(once, {{100, 1000}});
  EXPECT_EQ(Measure(once, 4, 190, 5000).time, PhaseTime::kBelowCalibrationNoise);
  EXPECT_EQ(Measure(once, 4, 250, 5000).time, PhaseTime::kMeasured);
}

TEST(PhaseTrackerTest, CalibrationCountsAreTheFirstSamplesAndAPhaseStartsANewRun) {
  PhaseTracker tracker;
  Calibrate(tracker, {{100, 200}}, 30);
  Calibrate(tracker, {{100, 200}}, 31);  // the same run: its counts are not taken
  EXPECT_EQ(Measure(tracker, 4, 1000, 2000).kvm_stats.at("insn_emulation"), 28u);
  Calibrate(tracker, {{100, 200}, {100, 200}}, 20);  // a new run after the phase
  const PhaseResult& r = Measure(tracker, 4, 1000, 2000);
  EXPECT_EQ(r.kvm_stats.at("insn_emulation"), 38u);
  EXPECT_EQ(r.calibration_noise->samples, 2u);
  EXPECT_EQ(r.marker_overhead->kvm_stats.at("insn_emulation"), 20u);
}

TEST(PhaseTrackerTest, FlagsClocksThatDisagreeBeyondTheTscRate) {
  PhaseTracker tracker(2'600'000);  // a 2.6 GHz TSC
  Calibrate(tracker, {{1000, 2600}, {1010, 2626}, {1020, 2652}});
  // 4 ops: 2,281,637 ns per op by the host clock, 597,473 cycles per op by the TSC.
  const PhaseResult& bad = Measure(tracker, 4, 4 * 2'281'637 + 1000, 4 * 597'473 + 2600);
  EXPECT_TRUE(bad.time_measured());
  EXPECT_EQ(bad.clocks_agree, std::optional<bool>(false));
  ASSERT_EQ(bad.time_warnings.size(), 1u);
  EXPECT_NE(bad.time_warnings[0].find("ns and tsc_cycles disagree beyond the TSC rate"),
            std::string::npos)
      << bad.time_warnings[0];
  EXPECT_NE(bad.time_warnings[0].find("2.600 GHz"), std::string::npos) << bad.time_warnings[0];
  // 10% apart: the markers' exits fall differently on the two clocks; that is agreement.
  const PhaseResult& good = Measure(tracker, 4, 1'000'000 + 1000, 2'340'000 + 2600);
  EXPECT_EQ(good.clocks_agree, std::optional<bool>(true));
  EXPECT_TRUE(good.time_warnings.empty());
  // Without the rate nothing is checked.
  PhaseTracker unknown;
  Calibrate(unknown, {{1000, 2600}});
  EXPECT_FALSE(Measure(unknown, 4, 9'000'000, 2'600'000).clocks_agree.has_value());
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

TEST(TrapLedgerTest, CountsByKindAndBySite) {
  TrapLedger ledger;
  ledger.Record("dr_write", 0x1005cb, "do_signal+0x3b");
  ledger.Record("dr_write", 0x1005cb, "do_signal+0x3b");
  ledger.Record("segment_load", 0x100571, "percpu_init+0x11");
  ledger.Record("msr_write", 0x100571, "percpu_init+0x11");  // a wrmsr site, other ECX
  ledger.AddDrLoads(1);
  EXPECT_EQ(ledger.total(), 4u);
  EXPECT_EQ(ledger.dr_loads(), 1u);
  EXPECT_EQ(ledger.by_kind(), (TrapCounts{{"dr_write", 2}, {"msr_write", 1}, {"segment_load", 1}}));
  EXPECT_EQ(ledger.tally().by_site,
            (TrapCounts{{"do_signal+0x3b", 2}, {"percpu_init+0x11", 2}}));
  ASSERT_EQ(ledger.by_site().size(), 3u);
  const TrapSiteCount& row = ledger.by_site().at({0x1005cb, "dr_write"});
  EXPECT_EQ(row.site, "do_signal+0x3b");
  EXPECT_EQ(row.count, 2u);
}

// --trap=pv: the guest's counts arrive in batches, and its load requests are counted.
TEST(TrapLedgerTest, BatchesCountAsSingleTraps) {
  TrapLedger batched, single;
  batched.Record("dr_write", 0x1005cb, "exit_to_user_mode+0x4b", 3);
  batched.Record("dr_write", 0x1005cb, "exit_to_user_mode+0x4b", 0);  // nothing
  batched.Record("dr_write", 0x1005cb, "exit_to_user_mode+0x4b", 2);
  for (int i = 0; i < 5; ++i) single.Record("dr_write", 0x1005cb, "exit_to_user_mode+0x4b");
  EXPECT_EQ(batched.tally(), single.tally());
  EXPECT_EQ(batched.by_site().at({0x1005cb, "dr_write"}).count, 5u);
  EXPECT_EQ(batched.by_site().size(), 1u);
  batched.AddHypercalls(2);
  EXPECT_EQ(batched.hypercalls(), 2u);
  EXPECT_EQ(batched.total(), 5u);  // a hypercall is no trap
}

TEST(PhaseTrackerTest, PvHypercallsArePerPhaseAndNetOfTheMarkers) {
  PhaseTracker tracker;
  auto sample = [](uint64_t calls) {
    PhaseSample s;
    s.traps.hypercalls = calls;
    return s;
  };
  ASSERT_TRUE(tracker.Begin("bp", 0, sample(4), true).ok());
  ASSERT_TRUE(tracker.End(sample(5)).ok());  // a marker path that made one (never, really)
  for (uint64_t ops : {3, 30}) {
    ASSERT_TRUE(tracker.Begin("bp", ops, sample(10)).ok());
    ASSERT_TRUE(tracker.End(sample(10 + 2 * ops + 1)).ok());
    EXPECT_EQ(tracker.results().back().traps.hypercalls, 2 * ops);
  }
}

TEST(PhaseTrackerTest, TrapsArePerPhaseAndNetOfTheMarkers) {
  PhaseTracker tracker;
  auto sample = [](uint64_t dr_writes, uint64_t swapgs, uint64_t loads) {
    PhaseSample s;
    s.traps.by_kind = {{"dr_write", dr_writes}, {"segment_load", swapgs}};
    s.traps.by_site = {{"do_signal+0x3b", dr_writes}, {"entry+0x10", swapgs}};
    s.traps.dr_loads = loads;
    return s;
  };
  // The marker path itself swaps GS twice (a syscall in and out).
  ASSERT_TRUE(tracker.Begin("sig", 0, sample(0, 10, 0), true).ok());
  ASSERT_TRUE(tracker.End(sample(0, 12, 0)).ok());
  for (uint64_t ops : {5, 50}) {
    // Each op: one DR7 write and a syscall's two swapgs; no hardware loads.
    ASSERT_TRUE(tracker.Begin("sig", ops, sample(100, 20, 3)).ok());
    ASSERT_TRUE(tracker.End(sample(100 + ops, 20 + 2 * ops + 2, 3)).ok());
    const PhaseResult& r = tracker.results().back();
    EXPECT_EQ(r.traps.by_kind, (TrapCounts{{"dr_write", ops}, {"segment_load", 2 * ops}}));
    EXPECT_EQ(r.traps.total(), 3 * ops);
    EXPECT_EQ(r.traps.by_site.at("entry+0x10"), 2 * ops);
    EXPECT_EQ(r.traps.dr_loads, 0u);
    ASSERT_TRUE(r.marker_overhead.has_value());
    EXPECT_EQ(r.marker_overhead->traps.total(), 2u);
  }
}

}  // namespace
}  // namespace sigvisor
