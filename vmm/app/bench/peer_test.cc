// The peer bench without QEMU or KVM: --peer lists, the guest's timing lines, the
// interleaved order (fake runners and a fake clock), the paired comparison on fixed
// inputs, and the JSON against its schema.
#include "vmm/app/bench/peer.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "vmm/app/bench/stats.h"
#include "vmm/report/testing/json_schema.h"

namespace sigvisor::bench {
namespace {

TEST(PeerTest, ParsesPeerLists) {
  absl::StatusOr<std::vector<PeerKind>> both = ParsePeerList("qemu-kvm, qemu-tcg");
  ASSERT_TRUE(both.ok()) << both.status();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0].accel, "kvm");
  EXPECT_EQ((*both)[1].accel, "tcg");
  EXPECT_EQ((*both)[1].binary, "qemu-system-x86_64");
  EXPECT_FALSE(ParsePeerList("qemu-kvm,qemu-kvm").ok());
  EXPECT_FALSE(ParsePeerList("bochs").ok());
  EXPECT_FALSE(ParsePeerList(",").ok());
}

TEST(PeerTest, ParsesTheGuestsTimingLines) {
  const std::string console =
      "sigvisor kernel: booting\n"
      "divzero: 100 signal, 1529728 tsc cycles per signal\n"
      "lat_sig sig_inst: 7 install, 332813 tsc cycles per install\n"
      "lat_sig sig_hndl: 7 signal, 1478 tsc cycles per signal\n"
      "sigpingpong: 3 round trip, 3898870 tsc cycles per round trip\n"
      "pipe_rw: garbage, x tsc cycles per iteration\n"
      "note: nothing to see\n";
  std::map<std::string, PeerPhase> lat = ParseTimingLines(console, "lat_sig");
  ASSERT_EQ(lat.count("lat_sig/sig_inst"), 1u);
  EXPECT_EQ(lat["lat_sig/sig_inst"].ops, 7u);
  EXPECT_EQ(lat["lat_sig/sig_inst"].tsc_cycles_per_op, 332813u);
  EXPECT_EQ(lat["lat_sig/sig_hndl"].tsc_cycles_per_op, 1478u);
  std::map<std::string, PeerPhase> ping = ParseTimingLines(console, "sigpingpong");
  EXPECT_EQ(ping["sigpingpong/sigpingpong"].ops, 3u);  // a two-word unit
  EXPECT_EQ(ping["sigpingpong/sigpingpong"].tsc_cycles_per_op, 3898870u);
  // One-word names are phases of whatever workload ran; malformed lines are skipped.
  EXPECT_EQ(ping.count("sigpingpong/divzero"), 1u);
  EXPECT_EQ(ParseTimingLines(console, "pipe_rw").count("pipe_rw/pipe_rw"), 0u);
  EXPECT_EQ(ParseTimingLines("", "divzero").size(), 0u);
}

TEST(PeerTest, EachRepetitionReversesWhoGoesFirst) {
  EXPECT_EQ(TargetOrder(0, 1), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(TargetOrder(1, 1), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(TargetOrder(2, 2), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(TargetOrder(3, 2), (std::vector<size_t>{2, 1, 0}));
  EXPECT_EQ(TargetOrder(0, 0), (std::vector<size_t>{0}));
}

TEST(PairedTest, SignTestAndIntervalOnFixedDifferences) {
  // Nine pairs, seven above zero: the interval is [d_(2), d_(8)] (coverage
  // 1 - 2 * 10/512), the sign test 2 * P(B(9, 1/2) <= 2) = 2 * 46/512.
  const std::vector<double> d = {5, -1, 3, 8, 2, -4, 7, 1, 6};
  const PairedComparison c = ComparePaired(d);
  EXPECT_EQ(c.pairs, 9u);
  EXPECT_EQ(c.above, 7u);
  EXPECT_EQ(c.below, 2u);
  EXPECT_EQ(c.median, 3);
  ASSERT_TRUE(c.has_interval);
  EXPECT_EQ(c.low, -1);
  EXPECT_EQ(c.high, 7);
  EXPECT_DOUBLE_EQ(c.coverage, 1 - 20.0 / 512);
  EXPECT_DOUBLE_EQ(c.sign_p, 92.0 / 512);

  // Ties count in the median and the interval, not in the sign test; six pairs give
  // [min, max] at 1 - 2/64.
  const PairedComparison ties = ComparePaired(std::vector<double>{0, 0, 1, 2, 3, 4});
  EXPECT_EQ(ties.above, 4u);
  EXPECT_EQ(ties.below, 0u);
  EXPECT_EQ(ties.median, 1.5);
  ASSERT_TRUE(ties.has_interval);
  EXPECT_EQ(ties.low, 0);
  EXPECT_EQ(ties.high, 4);
  EXPECT_DOUBLE_EQ(ties.coverage, 1 - 2.0 / 64);
  EXPECT_DOUBLE_EQ(ties.sign_p, 2.0 / 16);

  // Five pairs cannot reach 95% (1 - 2/32 = 93.75%); all tied, nothing is decided.
  const PairedComparison five = ComparePaired(std::vector<double>{-5, -4, -3, -2, -1});
  EXPECT_FALSE(five.has_interval);
  EXPECT_DOUBLE_EQ(five.sign_p, 2.0 / 32);
  EXPECT_EQ(ComparePaired(std::vector<double>{0, 0}).sign_p, 1);
  EXPECT_EQ(ComparePaired({}), PairedComparison{});
}

// Two workloads, three repetitions, two peers: the first runs (its run of lat_sig in
// repetition 2 prints nothing and fails), the second never starts.
class SideBySideTest : public ::testing::Test {
 protected:
  SideBySideTest() {
    matrix_.workloads = {"divzero", "lat_sig"};
    matrix_.variants = {{"baseline", "dr7=always", 100, "0x0000000000000001"}};
    matrix_.traps = {TrapMechanism::kOff};
    matrix_.repetitions = 3;
    matrix_.ops = 10;
    PeerResult kvm, tcg;
    kvm.kind = {"qemu-kvm", "qemu-system-x86_64", "kvm"};
    kvm.path = "/usr/bin/qemu-system-x86_64";
    tcg.kind = {"qemu-tcg", "qemu-system-x86_64", "tcg"};
    tcg.path = kvm.path;
    peers_ = {kvm, tcg};
  }

  // sigvisor: 1000 + 10 * repetition cycles per op; qemu-kvm: 990 + 20 * repetition.
  SideBySideResult Run() {
    uint64_t tick = 0;
    RunnerOptions options;
    options.host = {"pvm", true};
    return RunSideBySide(
        matrix_,
        [&](const RunSpec& spec, std::string* console) -> absl::StatusOr<RunSample> {
          calls_.push_back(absl::StrFormat("sigvisor %s %d", matrix_.workloads[spec.workload],
                                           spec.repetition));
          RunSample s;
          s.outcome = "exited";
          const uint64_t cycles = 1000 + 10 * spec.repetition;
          const std::string phase = spec.workload == 0 ? "divzero" : "sig_hndl";
          PhaseSample p;
          p.name = phase;
          p.ops = 10;
          p.wall_ns = cycles * 10;
          p.tsc_cycles = cycles * 10;
          s.phases.push_back(p);
          *console = absl::StrFormat("%s%s: 10 signal, %d tsc cycles per signal\n",
                                     spec.workload == 0 ? "" : "lat_sig ", phase, cycles);
          return s;
        },
        peers_,
        [&](const PeerResult& peer, const std::string& workload,
            uint32_t repetition) -> PeerAttempt {
          calls_.push_back(absl::StrFormat("%s %s %d", peer.kind.name, workload, repetition));
          PeerAttempt a;
          a.run.workload = workload;
          a.run.repetition = repetition;
          if (peer.kind.accel == "tcg" || (workload == "lat_sig" && repetition == 2)) {
            a.run.diagnosis = "QEMU exited with 1";
            a.never_ran = absl::StrFormat("QEMU with -accel %s does not work here: no",
                                          peer.kind.accel);
            return a;
          }
          a.run.ok = true;
          a.run.exit_status = 1;
          a.run.wall_ns = 5000;
          a.run.cpu_ns = 3000 + repetition;
          const std::string key = workload == "divzero" ? "divzero/divzero" : "lat_sig/sig_hndl";
          a.run.phases[key] = {10, 990 + 20 * repetition};
          return a;
        },
        options,
        // Each reading advances wall by 7 and CPU by 3: every sigvisor run costs {7, 3}.
        [&tick]() {
          ++tick;
          return RunCost{7 * tick, 3 * tick};
        });
  }

  Matrix matrix_;
  std::vector<PeerResult> peers_;
  std::vector<std::string> calls_;
};

TEST_F(SideBySideTest, InterleavesAndAlternatesWhoGoesFirst) {
  const SideBySideResult r = Run();
  EXPECT_EQ(calls_, (std::vector<std::string>{
                        "sigvisor divzero 0", "qemu-kvm divzero 0", "qemu-tcg divzero 0",
                        "sigvisor lat_sig 0", "qemu-kvm lat_sig 0",  // qemu-tcg skipped
                        "qemu-kvm divzero 1", "sigvisor divzero 1",
                        "qemu-kvm lat_sig 1", "sigvisor lat_sig 1",
                        "sigvisor divzero 2", "qemu-kvm divzero 2",
                        "sigvisor lat_sig 2", "qemu-kvm lat_sig 2"}));
  ASSERT_EQ(r.order.size(), 12u);  // the skipped peer's one attempt is no run
  EXPECT_EQ(r.order[0], (SideBySideStep{0, 0, 0}));
  EXPECT_EQ(r.order[1], (SideBySideStep{0, 0, 1}));
  EXPECT_EQ(r.order[4], (SideBySideStep{1, 0, 1}));
  EXPECT_EQ(r.order[5], (SideBySideStep{1, 0, 0}));
  ASSERT_EQ(r.sigvisor.runs.size(), 6u);
  EXPECT_TRUE(r.sigvisor.complete());
  EXPECT_EQ(r.sigvisor_costs, std::vector<RunCost>(6, RunCost{7, 3}));
  EXPECT_EQ(r.sigvisor_lines[1].at("lat_sig/sig_hndl").tsc_cycles_per_op, 1000u);
  EXPECT_FALSE(r.peers[0].skipped);
  ASSERT_EQ(r.peers[0].runs.size(), 6u);
  EXPECT_FALSE(r.peers[0].runs[5].ok);  // printed nothing after earlier runs: a failure
  EXPECT_TRUE(r.peers[1].skipped);
  EXPECT_EQ(r.peers[1].skip_reason, "QEMU with -accel tcg does not work here: no");
  EXPECT_TRUE(r.peers[1].runs.empty());
}

nlohmann::json LoadSchema() {
  std::ifstream file("docs/schema/sigvisor.bench-1.schema.json");
  EXPECT_TRUE(file.good()) << "missing the schema runfile";
  return nlohmann::json::parse(file);
}

TEST_F(SideBySideTest, ComparesPairsAndValidatesAgainstTheSchema) {
  const SideBySideResult r = Run();
  nlohmann::json doc = nlohmann::json::parse(BenchToJson(r.sigvisor).dump());
  doc["peers"] = nlohmann::json::parse(PeersToJson(r, 2'000'000).dump());
  const std::vector<std::string> errors = testing::ValidateJson(doc, LoadSchema());
  EXPECT_TRUE(errors.empty()) << errors.front();

  const nlohmann::json& peers = doc["peers"];
  EXPECT_EQ(peers["order"][5], (nlohmann::json{{"repetition", 1}, {"workload", "divzero"},
                                               {"target", "sigvisor"}}));
  EXPECT_EQ(peers["sigvisor_runs"][2]["cpu_ns"], 3);
  EXPECT_EQ(peers["targets"][0]["runs"][1]["cpu_ns"], 3000);
  const nlohmann::json& comparisons = peers["targets"][0]["comparisons"];
  // divzero: sigvisor 1000, 1010, 1020 against 990, 1010, 1030: +10, 0, -10.
  ASSERT_EQ(comparisons.size(), 6u);
  EXPECT_EQ(comparisons[0]["phase"], "divzero");
  EXPECT_EQ(comparisons[0]["metric"], "tsc_cycles_per_op");
  EXPECT_EQ(comparisons[0]["pairs"], 3);
  EXPECT_EQ(comparisons[0]["difference_median"], 0.0);
  EXPECT_EQ(comparisons[0]["sigvisor_higher"], 1);
  EXPECT_EQ(comparisons[0]["sigvisor_lower"], 1);
  EXPECT_EQ(comparisons[0]["difference_interval"], nullptr);
  EXPECT_EQ(comparisons[0]["sign_test_p"], 1.0);
  // Run CPU: sigvisor 3 ns against 3000, 3001, 3002.
  EXPECT_EQ(comparisons[2]["metric"], "run_cpu_ns");
  EXPECT_EQ(comparisons[2]["phase"], nullptr);
  EXPECT_EQ(comparisons[2]["difference_median"], -2998.0);
  EXPECT_EQ(comparisons[2]["sign_test_p"], 0.25);
  // lat_sig: QEMU's repetition 2 failed, so two pairs: +10 and 0.
  EXPECT_EQ(comparisons[3]["phase"], "sig_hndl");
  EXPECT_EQ(comparisons[3]["pairs"], 2);
  EXPECT_EQ(comparisons[3]["difference_median"], 5.0);
  EXPECT_TRUE(peers["targets"][1]["comparisons"].empty());

  const std::string table = FormatPeerTable(r, 1000);  // 1 MHz: a cycle is a us
  // The whole run's wall time first, then the phases, then the run's CPU time.
  const std::vector<std::string> lines = absl::StrSplit(table, '\n');
  ASSERT_GE(lines.size(), 10u) << table;
  EXPECT_EQ(lines[0].rfind("side by side: the bundled kernel (baseline), 10 ops per phase after 1 "
                           "warm-up, 3 repetitions, medians; the runs interleaved",
                           0),
            0u)
      << table;
  EXPECT_EQ(lines[2].rfind("divzero      -            total run ms", 0), 0u) << table;
  EXPECT_NE(lines[3].find("divzero      tsc cycles per op"), std::string::npos) << table;
  EXPECT_NE(lines[4].find("us per op                     1010.00        1010.00        skipped"),
            std::string::npos)
      << table;
  EXPECT_NE(lines[8].find("-            run CPU ms                       0.00           0.00"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("  lat_sig sig_hndl, qemu-kvm per op: +5.00 us (+0.5%) [no 95% interval "
                       "from fewer than 6 pairs]; sigvisor higher in 1 of 2 pairs, lower in 0; "
                       "sign test p = 1\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("  divzero divzero, qemu-kvm per op: +0.00 us (+0.0%) [no 95% interval "
                       "from fewer than 6 pairs]; sigvisor higher in 1 of 3 pairs, lower in 1; "
                       "sign test p = 1\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("qemu-tcg: skipped: QEMU with -accel tcg does not work here: no\n"),
            std::string::npos);
  EXPECT_NE(table.find("qemu-kvm: lat_sig run 3 failed: QEMU exited with 1\n"),
            std::string::npos);
}

}  // namespace
}  // namespace sigvisor::bench
