#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/bench/matrix.h"
#include "vmm/app/bench/results.h"
#include "vmm/app/bench/runner.h"
#include "vmm/app/bench/stats.h"
#include "vmm/app/launch/workloads.h"
#include "vmm/report/testing/json_schema.h"
#include "vmm/report/testing/xml_check.h"

namespace sigvisor::bench {
namespace {

Matrix TwoByTwo() {
  Matrix m;
  m.workloads = {"divzero", "lat_sig"};
  m.variants = {{"baseline", "dr7=always", 100, "0x0000000000000001"},
                {"dr7=lazy", "dr7=lazy", 101, "0x0000000000000002"}};
  m.traps = {TrapMechanism::kOff, TrapMechanism::kPatch};
  m.repetitions = 3;
  m.ops = 10;
  return m;
}

// A deterministic fake boot: counts depend on the variant and trap, times on the
// run index (noise), lat_sig has two phases.
RunSample FakeRun(const Matrix& m, const RunSpec& spec) {
  RunSample sample;
  sample.spec = spec;
  sample.outcome = "exited";
  const bool lazy = spec.variant == 1, trapped = m.traps[spec.trap] == TrapMechanism::kPatch;
  std::vector<std::string> phases = {m.workloads[spec.workload]};
  if (phases[0] == "lat_sig") phases = {"sig_inst", "sig_hndl"};
  for (const std::string& name : phases) {
    PhaseSample p;
    p.name = name;
    p.ops = m.ops;
    p.kernel_insns = m.ops * (lazy ? 833 : 832);
    if (trapped) {
      p.traps["segment_load"] = 4 * m.ops;
      if (!lazy) p.traps["dr_write"] = m.ops;
      p.exits = p.traps_total();
    }
    p.wall_ns = m.ops * (700000 + 1000 * (spec.index % 7));
    p.tsc_cycles = *p.wall_ns * 2;
    sample.phases.push_back(p);
  }
  return sample;
}

TEST(MatrixTest, ScheduleInterleavesVariantsWithinEachRepetition) {
  const Matrix m = TwoByTwo();
  const std::vector<RunSpec> runs = Schedule(m);
  ASSERT_EQ(runs.size(), m.runs());
  ASSERT_EQ(runs.size(), 24u);
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].index, i);
    EXPECT_EQ(runs[i].variant, i % 2) << i;  // A B A B ...
  }
  EXPECT_EQ(runs[0].repetition, 0u);
  EXPECT_EQ(runs[8].repetition, 1u);
  EXPECT_EQ(runs[2].trap, 1u);
  EXPECT_EQ(runs[4].workload, 1u);
}

TEST(MatrixTest, ShardsCoverEveryRunOnce) {
  for (size_t runs : {0u, 1u, 7u, 24u, 100u}) {
    for (uint32_t n = 1; n <= 9; ++n) {
      size_t next = 0;
      for (uint32_t i = 1; i <= n; ++i) {
        RunRange r = ShardRange(runs, {i, n});
        EXPECT_EQ(r.begin, next) << runs << " " << i << "/" << n;
        EXPECT_LE(r.end - r.begin, runs / n + 1);
        next = r.end;
      }
      EXPECT_EQ(next, runs);
    }
  }
}

TEST(MatrixTest, ParsesShards) {
  EXPECT_EQ(*ParseShard("2/4"), (Shard{2, 4}));
  EXPECT_EQ(*ParseShard("1/1"), (Shard{1, 1}));
  for (const char* bad : {"0/4", "5/4", "4", "a/b", "1/0", "", "-1/2"}) {
    EXPECT_FALSE(ParseShard(bad).ok()) << bad;
  }
}

TEST(MatrixTest, ParsesWorkloadAndVariantLists) {
  EXPECT_EQ(*ParseWorkloadList("divzero, pipe_rw"),
            (std::vector<std::string>{"divzero", "pipe_rw"}));
  // all: the workloads of one vCPU; one across CPUs is named.
  EXPECT_EQ(ParseWorkloadList("all")->size(), launch::BenchWorkloadNames().size() - 3);
  EXPECT_EQ(*ParseWorkloadList("xcpu_pingpong"), (std::vector<std::string>{"xcpu_pingpong"}));
  EXPECT_FALSE(ParseWorkloadList("divzero,nope").ok());
  EXPECT_FALSE(ParseWorkloadList("divzero,divzero").ok());
  EXPECT_FALSE(ParseWorkloadList("").ok());

  absl::StatusOr<std::vector<VariantInfo>> v = ParseVariantList("baseline; accelerated,dr7=always");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[0].name, "baseline");
  EXPECT_EQ((*v)[1].name, "accelerated,dr7=always");
  EXPECT_GT((*v)[0].text_bytes, 0u);
  EXPECT_NE((*v)[0].image_fnv1a64, (*v)[1].image_fnv1a64);
  EXPECT_FALSE(ParseVariantList("baseline;dr7=always").ok());  // the same build twice
  EXPECT_FALSE(ParseVariantList("baseline;dr7=sometimes").ok());
  EXPECT_FALSE(ParseVariantList("dr7=lazy,pda=direct").ok());  // not built
  EXPECT_EQ(ParseVariantList("all")->size(), 10u);
}

TEST(MatrixTest, AVariantSpecMayNameItsMachine) {
  absl::StatusOr<std::vector<VariantInfo>> v =
      ParseVariantList("smp=on@vcpus=2@ipi=x2apic; smp=on@ipi=pv@vcpus=2 smp=on@vcpus=2");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->size(), 3u);
  EXPECT_EQ((*v)[0].name, "smp=on@vcpus=2@ipi=x2apic");
  EXPECT_EQ((*v)[0].vcpus, 2);
  EXPECT_EQ((*v)[0].ipi, "x2apic");
  EXPECT_EQ((*v)[0].build_name(), "smp=on");
  EXPECT_EQ((*v)[1].name, "smp=on@vcpus=2@ipi=pv");  // canonical order
  EXPECT_EQ((*v)[1].ipi, "pv");
  EXPECT_EQ((*v)[2].name, "smp=on@vcpus=2");
  EXPECT_EQ((*v)[2].ipi, "");
  // One build, one image: the machine is not the build.
  EXPECT_EQ((*v)[0].image_fnv1a64, (*v)[2].image_fnv1a64);
  EXPECT_EQ((*v)[0].settings, (*v)[2].settings);
  // Without a suffix: one vCPU, the name as before.
  absl::StatusOr<std::vector<VariantInfo>> plain = ParseVariantList("smp=on; baseline");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ((*plain)[0].vcpus, 1);
  EXPECT_EQ((*plain)[0].name, (*plain)[0].build_name());
  // The same build on the same machine twice.
  EXPECT_FALSE(ParseVariantList("smp=on@vcpus=2; smp=on@vcpus=2").ok());
  EXPECT_TRUE(ParseVariantList("smp=on@vcpus=2; smp=on@vcpus=3").ok());
}

TEST(MatrixTest, AVariantSpecMayNameWhoseLocalApics) {
  absl::StatusOr<std::vector<VariantInfo>> v = ParseVariantList(
      "smp=on@vcpus=2@ipi=x2apic; smp=on@vcpus=2@ipi=x2apic@lapic=vmm; "
      "smp=on@lapic=kvm@ipi=pv@vcpus=2 smp=on@lapic=vmm@vcpus=2");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->size(), 4u);
  EXPECT_EQ((*v)[0].lapic, "");  // not named: run's default, and the name as before
  EXPECT_EQ((*v)[0].name, "smp=on@vcpus=2@ipi=x2apic");
  EXPECT_EQ((*v)[1].name, "smp=on@vcpus=2@ipi=x2apic@lapic=vmm");
  EXPECT_EQ((*v)[1].vcpus, 2);
  EXPECT_EQ((*v)[1].ipi, "x2apic");
  EXPECT_EQ((*v)[1].lapic, "vmm");
  EXPECT_EQ((*v)[1].build_name(), "smp=on");
  EXPECT_EQ((*v)[2].name, "smp=on@vcpus=2@ipi=pv@lapic=kvm");  // canonical order
  EXPECT_EQ((*v)[2].lapic, "kvm");
  EXPECT_EQ((*v)[3].name, "smp=on@vcpus=2@lapic=vmm");
  EXPECT_EQ((*v)[3].ipi, "");
  // One build, one image: whose local APICs is the machine's, not the build's.
  EXPECT_EQ((*v)[0].image_fnv1a64, (*v)[1].image_fnv1a64);
  EXPECT_FALSE((*v)[1].default_machine());
  EXPECT_EQ(VariantInfo::MachineSuffix(2, "xapic", "vmm"), "@vcpus=2@ipi=xapic@lapic=vmm");
  EXPECT_EQ(VariantInfo::MachineSuffix(1, "", ""), "");
  // The same machine twice.
  EXPECT_FALSE(ParseVariantList("smp=on@vcpus=2@lapic=vmm; smp=on@lapic=vmm@vcpus=2").ok());
}

TEST(MatrixTest, AMachineRunWouldRefuseIsRefusedInOneLine) {
  struct Case {
    const char* spec;
    const char* says;  // part of the one line
  };
  const Case cases[] = {
      // run's own checks (the board's): a uniprocessor build, --ipi on one vCPU, bounds.
      {"baseline@vcpus=2", "uniprocessor"},
      {"smp=on@ipi=pv", "one vCPU sends no IPIs"},
      {"smp=on@lapic=vmm", "--lapic vmm: a machine of one vCPU has no local APIC"},
      {"baseline@vcpus=2@lapic=vmm", "uniprocessor"},
      {"smp=on@vcpus=0", "--vcpus 0"},
      {"smp=on@vcpus=99", "--vcpus 99"},
      // run's parse of --ipi names the choices.
      {"smp=on@vcpus=2@ipi=msi", "give x2apic"},
      // and of --lapic.
      {"smp=on@vcpus=2@lapic=qemu", "--lapic 'qemu': give kvm"},
      // bench's own: the suffix's shape.
      {"smp=on@vcpus=two", "not a number"},
      {"smp=on@vcpus=2@vcpus=2", "given twice"},
      {"smp=on@vcpus=2@lapic=vmm@lapic=kvm", "@lapic=kvm is given twice"},
      {"smp=on@cores=2", "not a machine setting"},
      {"smp=on@cores=2", "@lapic=kvm|vmm"},
      {"@vcpus=2", "names no build"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<VariantInfo>> v = ParseVariantList(c.spec);
    ASSERT_FALSE(v.ok()) << c.spec;
    const std::string message(v.status().message());
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(message.find(c.says), std::string::npos) << c.spec << ": " << message;
    EXPECT_EQ(message.rfind("--variants: ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(MatrixTest, AWorkloadAcrossCpusNeedsSeveralVcpusOnEveryVariant) {
  Matrix m;
  m.workloads = {"sigpingpong", "xcpu_pingpong"};
  m.variants = *ParseVariantList("smp=on@vcpus=2@ipi=x2apic; smp=on@vcpus=2@ipi=pv");
  EXPECT_TRUE(CheckWorkloadVcpus(m).ok());
  m.variants = *ParseVariantList("smp=on@vcpus=2; baseline");
  absl::Status s = CheckWorkloadVcpus(m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(std::string(s.message()),
            "--workloads: xcpu_pingpong runs across CPUs and needs @vcpus=2 on every variant; "
            "'baseline' has 1 (give e.g. --variants 'smp=on@vcpus=2')");
  m.workloads = {"sigpingpong"};
  EXPECT_TRUE(CheckWorkloadVcpus(m).ok());
}

TEST(MatrixTest, ALinuxBuildIsNamedByItsFileAndHashedByItsBytes) {
  const std::string path = ::testing::TempDir() + "/vmlinuz-test";
  {
    std::ofstream file(path, std::ios::binary);
    file << "not really a kernel";  // the KVM target loads it; the matrix only names it
  }
  absl::StatusOr<std::vector<VariantInfo>> v = ParseVariantList("baseline; linux=" + path);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->size(), 2u);
  EXPECT_FALSE((*v)[0].linux_kernel());
  const VariantInfo& linux_build = (*v)[1];
  EXPECT_TRUE(linux_build.linux_kernel());
  EXPECT_EQ(linux_build.name, "linux:vmlinuz-test");
  EXPECT_EQ(linux_build.linux_image, path);
  EXPECT_EQ(linux_build.settings, "stock Linux kernel " + path);
  EXPECT_EQ(linux_build.image_fnv1a64.size(), 18u);
  EXPECT_NE(linux_build.image_fnv1a64, (*v)[0].image_fnv1a64);

  EXPECT_FALSE(ParseVariantList("linux=" + path + ";linux=" + path).ok());  // twice
  absl::StatusOr<std::vector<VariantInfo>> missing = ParseVariantList("linux=/nonexistent/bz");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open '/nonexistent/bz'"), std::string::npos)
      << missing.status();
  EXPECT_FALSE(ParseVariantList("linux=").ok());
  absl::StatusOr<std::vector<VariantInfo>> directory =
      ParseVariantList("linux=" + ::testing::TempDir());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("not a regular file"), std::string::npos)
      << directory.status();
}

// The words sigvisor's runs and a peer's give the bundled kernel: the guest's default
// warm-up left off, so a bench without --warmup boots what it always booted.
TEST(MatrixTest, BundledKernelWordsCarryAWarmupOnlyWhenGiven) {
  Matrix m;
  m.ops = 50;
  EXPECT_EQ(BundledKernelWords("divzero", m), "workload=divzero ops=50");
  m.warmup = 300;
  EXPECT_EQ(BundledKernelWords("lat_sig", m), "workload=lat_sig ops=50 warmup=300");
  EXPECT_EQ(BundledKernelWords("hello", m), "workload=hello ops=50");  // it has none
}

TEST(StatsTest, Summary) {
  const double values[] = {5, 1, 3, 2, 4};
  Summary s = Summarize(values);
  EXPECT_EQ(s.n, 5u);
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 5);
  EXPECT_EQ(s.mean, 3);
  EXPECT_NEAR(s.stddev, 1.5811388, 1e-6);
  const double even[] = {4, 1, 3, 2};
  EXPECT_EQ(Summarize(even).median, 2.5);
  EXPECT_EQ(Summarize(std::span<const double>()).n, 0u);
}

TEST(StatsTest, MannWhitney) {
  const double low[] = {1, 2, 3}, high[] = {4, 5, 6};
  EXPECT_NEAR(MannWhitneyP(low, high), 0.1, 1e-12);  // 2 / C(6,3)
  EXPECT_NEAR(MannWhitneyP(high, low), 0.1, 1e-12);
  const double a[] = {1, 3, 5, 7}, b[] = {2, 4, 6, 8};
  EXPECT_GT(MannWhitneyP(a, b), 0.5);
  std::vector<double> x, y;
  for (int i = 0; i < 10; ++i) {
    x.push_back(100 + i);
    y.push_back(200 + i);
  }
  EXPECT_LT(MannWhitneyP(x, y), 0.001);  // exact: 2 / C(20,10)
  EXPECT_NEAR(MannWhitneyP(x, y), 2.0 / 184756.0, 1e-12);
  const double same[] = {1, 1, 1};
  EXPECT_EQ(MannWhitneyP(same, same), 1.0);
  const double tied_a[] = {1, 1, 2, 2, 3}, tied_b[] = {4, 4, 5, 5, 6};
  EXPECT_LT(MannWhitneyP(tied_a, tied_b), 0.02);  // normal approximation
}

BenchResult RunFake(const Matrix& m, Shard shard, std::function<bool()> stop = {}) {
  RunnerOptions options;
  options.shard = shard;
  options.host = {"pvm", true};
  options.stop_requested = std::move(stop);
  return RunMatrix(
      m, [&](const RunSpec& spec) -> absl::StatusOr<RunSample> { return FakeRun(m, spec); },
      options);
}

TEST(RunnerTest, MeasuresEveryCellWithExactCounts) {
  const Matrix m = TwoByTwo();
  BenchResult r = RunFake(m, {1, 1});
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.runs.size(), 24u);
  std::vector<Cell> cells = Cells(r);
  ASSERT_EQ(cells.size(), 12u);  // (divzero + sig_inst + sig_hndl) x 2 traps x 2 variants
  const Cell* always = FindCell(cells, r, "divzero", "divzero", "baseline", TrapMechanism::kPatch);
  const Cell* lazy = FindCell(cells, r, "divzero", "divzero", "dr7=lazy", TrapMechanism::kPatch);
  ASSERT_TRUE(always && lazy);
  EXPECT_EQ(always->samples.size(), 3u);
  EXPECT_TRUE(always->counts_agree);
  EXPECT_EQ(always->per_op.traps_by_kind.at("dr_write"), 1.0);
  EXPECT_EQ(lazy->per_op.traps_by_kind.at("dr_write"), 0.0);
  EXPECT_EQ(*lazy->per_op.kernel_insns, 833.0);
  EXPECT_EQ(always->ns.n, 3u);
  EXPECT_LE(always->ns.min, always->ns.median);
  EXPECT_LE(always->ns.median, always->ns.max);
  EXPECT_NE(FindCell(cells, r, "lat_sig", "sig_hndl", "dr7=lazy", TrapMechanism::kOff), nullptr);
}

TEST(RunnerTest, CountsThatDisagreeAreFlagged) {
  Matrix m = TwoByTwo();
  m.workloads = {"divzero"};
  RunnerOptions options;
  options.host = {"pvm", true};
  BenchResult r = RunMatrix(
      m,
      [&](const RunSpec& spec) -> absl::StatusOr<RunSample> {
        RunSample s = FakeRun(m, spec);
        if (spec.repetition == 2) *s.phases[0].kernel_insns += m.ops;
        return s;
      },
      options);
  std::vector<Cell> cells = Cells(r);
  ASSERT_FALSE(cells.empty());
  EXPECT_FALSE(cells[0].counts_agree);
  ASSERT_EQ(cells[0].mismatches.size(), 1u);
  EXPECT_EQ(cells[0].mismatches[0], "kernel_insns per op: 832 (2 runs), 833 (1 run)");
  EXPECT_NE(FormatBenchText(r).find("COUNTS DIFFER"), std::string::npos);
}

TEST(RunnerTest, AFailedRunIsRecordedAndTheRestStillRun) {
  const Matrix m = TwoByTwo();
  RunnerOptions options;
  options.host = {"pvm", true};
  BenchResult r = RunMatrix(
      m,
      [&](const RunSpec& spec) -> absl::StatusOr<RunSample> {
        if (spec.index == 5) return absl::InternalError("KVM_RUN: boom");
        RunSample s = FakeRun(m, spec);
        if (spec.index == 6) {
          s.outcome = "timeout";
          s.exit_code = 1;
          s.diagnosis = "the watchdog fired";
          s.phases.clear();
        }
        return s;
      },
      options);
  EXPECT_EQ(r.runs.size(), 24u);
  EXPECT_EQ(r.runs_failed(), 2u);
  EXPECT_FALSE(r.complete());
  EXPECT_EQ(r.runs[5].outcome, "host_error");
  EXPECT_EQ(r.runs[5].diagnosis, "KVM_RUN: boom");
  EXPECT_EQ(r.warnings.size(), 2u);
  nlohmann::json doc = BenchToJson(r);
  EXPECT_FALSE(doc["complete"].get<bool>());
  EXPECT_EQ(doc["runs_measured"], 22);
  EXPECT_EQ(doc["runs_failed"], 2);
  EXPECT_NE(FormatBenchText(r).find("INCOMPLETE: 22 of 24 runs measured (2 failed;"),
            std::string::npos);
}

// A guest that exits 1 after its phases ended (a workload's own check failing, as
// lat_sig's did under --inject sig=usr1) fails the run, but the phases it ended
// normally are measurements all the same: the cells keep them.
TEST(RunnerTest, PhasesThatEndedBeforeAFailureAreKept) {
  const Matrix m = TwoByTwo();
  RunnerOptions options;
  options.host = {"pvm", true};
  BenchResult r = RunMatrix(
      m,
      [&](const RunSpec& spec) -> absl::StatusOr<RunSample> {
        RunSample s = FakeRun(m, spec);
        s.exit_code = 1;
        return s;
      },
      options);
  EXPECT_EQ(r.runs_ok(), 0u);
  EXPECT_FALSE(r.complete());
  const std::vector<Cell> cells = Cells(r);
  ASSERT_FALSE(cells.empty());
  for (const Cell& cell : cells) EXPECT_EQ(cell.samples.size(), m.repetitions) << cell.phase;
  const std::string text = FormatBenchText(r);
  EXPECT_NE(text.find("INCOMPLETE: 0 of 24 runs measured (24 failed"), std::string::npos) << text;
  EXPECT_NE(text.find("phases that ended normally"), std::string::npos) << text;
}

TEST(RunnerTest, AStopRequestKeepsWhatWasMeasured) {
  const Matrix m = TwoByTwo();
  int calls = 0;
  BenchResult r = RunFake(m, {1, 1}, [&] { return ++calls > 5; });
  EXPECT_EQ(r.runs.size(), 5u);
  EXPECT_TRUE(r.interrupted);
  EXPECT_FALSE(r.complete());
  EXPECT_FALSE(Cells(r).empty());
  EXPECT_NE(CompletenessLine(r).find("interrupted"), std::string::npos);
}

// Per-op counts of every cell, for comparing results.
std::map<std::string, std::string> CountsOf(const BenchResult& r) {
  std::map<std::string, std::string> out;
  for (const Cell& c : Cells(r)) {
    out[absl::StrFormat("%d/%s/%d/%d", c.workload, c.phase, c.variant, c.trap)] = absl::StrFormat(
        "%d samples, %g exits %g traps %g dr_write %g insns", c.samples.size(), c.per_op.exits,
        c.per_op.traps, c.per_op.traps_by_kind.at("dr_write"), c.per_op.kernel_insns.value_or(-1));
  }
  return out;
}

TEST(MergeTest, ShardsThroughJsonMergeToTheFullRun) {
  const Matrix m = TwoByTwo();
  const BenchResult full = RunFake(m, {1, 1});
  for (uint32_t n : {2u, 3u, 5u}) {
    std::vector<BenchResult> parts;
    for (uint32_t i = n; i >= 1; --i) {  // any order
      const std::string text = BenchToJson(RunFake(m, {i, n})).dump();
      absl::StatusOr<BenchResult> parsed = BenchFromJson(nlohmann::json::parse(text));
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      parts.push_back(*std::move(parsed));
    }
    absl::StatusOr<BenchResult> merged = MergeResults(parts);
    ASSERT_TRUE(merged.ok()) << merged.status();
    EXPECT_TRUE(merged->complete()) << n;
    EXPECT_EQ(merged->runs.size(), full.runs.size());
    EXPECT_EQ(CountsOf(*merged), CountsOf(full)) << n;
    for (size_t i = 0; i < full.runs.size(); ++i) {
      EXPECT_EQ(merged->runs[i].phases, full.runs[i].phases);
    }
  }
}

TEST(MergeTest, MissingShardLeavesTheResultIncomplete) {
  const Matrix m = TwoByTwo();
  absl::StatusOr<BenchResult> merged = MergeResults({RunFake(m, {1, 3}), RunFake(m, {3, 3})});
  ASSERT_TRUE(merged.ok());
  EXPECT_FALSE(merged->complete());
  EXPECT_EQ(merged->warnings.back(), "missing shards: 2/3");
}

TEST(MergeTest, RefusesWhatDoesNotBelongTogether) {
  const Matrix m = TwoByTwo();
  Matrix other = m;
  other.ops = 20;
  EXPECT_FALSE(MergeResults({RunFake(m, {1, 2}), RunFake(m, {1, 2})}).ok());      // twice
  EXPECT_FALSE(MergeResults({RunFake(m, {1, 2}), RunFake(other, {2, 2})}).ok());  // matrices
  EXPECT_FALSE(MergeResults({RunFake(m, {1, 2}), RunFake(m, {2, 3})}).ok());      // counts
  Matrix rebuilt = m;
  rebuilt.variants[1].image_fnv1a64 = "0x0000000000000003";  // another build of the kernel
  EXPECT_FALSE(MergeResults({RunFake(m, {1, 2}), RunFake(rebuilt, {2, 2})}).ok());
  EXPECT_FALSE(MergeResults({}).ok());
}

// --warmup goes through the JSON and must match across shards; a result written before
// the flag existed reads as the guest's default, one.
TEST(MergeTest, WarmupRoundTripsAndMustMatch) {
  Matrix warmed = TwoByTwo();
  warmed.warmup = 300;
  nlohmann::json doc = BenchToJson(RunFake(warmed, {1, 2}));
  EXPECT_EQ(doc["matrix"]["warmup"], 300);
  absl::StatusOr<BenchResult> parsed = BenchFromJson(doc);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->matrix.warmup, 300u);
  doc["matrix"].erase("warmup");
  parsed = BenchFromJson(doc);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->matrix.warmup, 1u);

  absl::StatusOr<BenchResult> merged =
      MergeResults({RunFake(warmed, {1, 2}), RunFake(TwoByTwo(), {2, 2})}, {"a.json", "b.json"});
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.status().message(),
            "'a.json' and 'b.json' are not shards of one bench: matrix.warmup is 300 in 'a.json' "
            "and 1 in 'b.json'");
  EXPECT_TRUE(MergeResults({RunFake(warmed, {1, 2}), RunFake(warmed, {2, 2})}).ok());
}

// bench --restore goes through the JSON and must match across shards; a result written
// before the flag existed booted every run.
TEST(MergeTest, RestoredRoundTripsAndMustMatch) {
  Matrix restored = TwoByTwo();
  restored.restored = true;
  nlohmann::json doc = BenchToJson(RunFake(restored, {1, 2}));
  EXPECT_EQ(doc["matrix"]["restored"], true);
  absl::StatusOr<BenchResult> parsed = BenchFromJson(doc);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->matrix.restored);
  doc["matrix"].erase("restored");
  parsed = BenchFromJson(doc);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->matrix.restored);

  absl::StatusOr<BenchResult> merged =
      MergeResults({RunFake(restored, {1, 2}), RunFake(TwoByTwo(), {2, 2})}, {"a.json", "b.json"});
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.status().message(),
            "'a.json' and 'b.json' are not shards of one bench: matrix.restored is true in "
            "'a.json' and false in 'b.json'");
}

TEST(MergeTest, ARefusalNamesBothPartsAndTheFieldThatDiffers) {
  const Matrix m = TwoByTwo();
  Matrix other = m;
  other.ops = 20;
  auto why = [](absl::StatusOr<BenchResult> merged) {
    return merged.ok() ? std::string("merged") : std::string(merged.status().message());
  };
  EXPECT_EQ(why(MergeResults({RunFake(m, {1, 2}), RunFake(other, {2, 2})}, {"a.json", "b.json"})),
            "'a.json' and 'b.json' are not shards of one bench: matrix.ops is 10 in 'a.json' and "
            "20 in 'b.json'");
  Matrix rebuilt = m;
  rebuilt.variants[1].image_fnv1a64 = "0x0000000000000003";
  EXPECT_NE(why(MergeResults({RunFake(m, {1, 2}), RunFake(rebuilt, {2, 2})}, {"a.json", "b.json"}))
                .find("matrix.variants[1].image_fnv1a64"),
            std::string::npos);
  EXPECT_EQ(why(MergeResults({RunFake(m, {1, 2}), RunFake(m, {2, 3})}, {"a.json", "b.json"})),
            "'a.json' and 'b.json' are not shards of one bench: shards.count is 2 in 'a.json' and "
            "3 in 'b.json'");
  EXPECT_EQ(why(MergeResults({RunFake(m, {1, 2}), RunFake(m, {2, 2}), RunFake(m, {1, 2})},
                             {"a.json", "b.json", "c.json"})),
            "shard 1/2 is in both 'a.json' and 'c.json' (shards.included)");
  // Without names, by position.
  EXPECT_NE(why(MergeResults({RunFake(m, {1, 2}), RunFake(other, {2, 2})})).find("result 2"),
            std::string::npos);
}

TEST(JsonTest, RefusesOtherDocuments) {
  EXPECT_FALSE(BenchFromJson(nlohmann::json::parse(R"({"schema": "sigvisor.run/1"})")).ok());
  EXPECT_FALSE(BenchFromJson(nlohmann::json::parse("[]")).ok());
  nlohmann::json doc = BenchToJson(RunFake(TwoByTwo(), {1, 1}));
  doc["runs"][0]["variant"] = "accelerated";
  EXPECT_FALSE(BenchFromJson(doc).ok());
  doc = BenchToJson(RunFake(TwoByTwo(), {1, 1}));
  doc["runs"][0]["phases"][0]["wall_ns"] = "soon";
  EXPECT_FALSE(BenchFromJson(doc).ok());
}

// The documents name the mechanisms as --traps does; a name that is none is refused
// where it is read, and a run's trap must be one of the matrix's.
TEST(JsonTest, TrapMechanismsTravelByName) {
  const BenchResult result = RunFake(TwoByTwo(), {1, 1});
  nlohmann::json doc = BenchToJson(result);
  EXPECT_EQ(doc["matrix"]["traps"], nlohmann::json({"off", "patch"}));
  EXPECT_EQ(doc["runs"][0]["trap"], "off");
  absl::StatusOr<BenchResult> parsed = BenchFromJson(doc);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->matrix.traps, result.matrix.traps);

  doc["matrix"]["traps"][1] = "auto";
  EXPECT_EQ(BenchFromJson(doc).status().message(),
            "field 'traps' holds 'auto', which is not a trap mechanism");
  doc = BenchToJson(result);
  doc["runs"][0]["trap"] = "pv";
  EXPECT_EQ(BenchFromJson(doc).status().message(),
            "a run names trap mechanism 'pv', which is not in the matrix");

  Matrix untrapped = TwoByTwo();
  untrapped.traps = {TrapMechanism::kOff};
  EXPECT_EQ(
      MergeResults({RunFake(TwoByTwo(), {1, 2}), RunFake(untrapped, {2, 2})}, {"a.json", "b.json"})
          .status()
          .message(),
      "'a.json' and 'b.json' are not shards of one bench: matrix.traps is [off, patch] in "
      "'a.json' and [off] in 'b.json'");
}

nlohmann::json LoadSchema() {
  std::ifstream file("docs/schema/sigvisor.bench-1.schema.json");
  EXPECT_TRUE(file.good()) << "missing the schema runfile";
  return nlohmann::json::parse(file);
}

TEST(JsonTest, ValidatesAgainstTheDocumentedSchema) {
  const nlohmann::json schema = LoadSchema();
  Matrix m = TwoByTwo();
  RunnerOptions options;
  options.host = {"hardware", false};
  BenchResult r = RunMatrix(
      m,
      [&](const RunSpec& spec) -> absl::StatusOr<RunSample> {
        if (spec.index == 3) return absl::InternalError("no VM");
        RunSample s = FakeRun(m, spec);
        for (PhaseSample& p : s.phases) p.kernel_insns.reset();  // not counted on hardware
        return s;
      },
      options);
  const nlohmann::json doc = nlohmann::json::parse(BenchToJson(r).dump());
  std::vector<std::string> errors = testing::ValidateJson(doc, schema);
  EXPECT_TRUE(errors.empty()) << errors.front();
  const nlohmann::json merged = nlohmann::json::parse(
      BenchToJson(*MergeResults({RunFake(m, {2, 2}), RunFake(m, {1, 2})})).dump());
  errors = testing::ValidateJson(merged, schema);
  EXPECT_TRUE(errors.empty()) << errors.front();

  // The validator is not vacuous: an undocumented field, a missing one, a wrong type.
  nlohmann::json bad = doc;
  bad["cells"][0]["surprise"] = 1;
  EXPECT_FALSE(testing::ValidateJson(bad, schema).empty());
  bad = doc;
  bad["runs"][0].erase("outcome");
  EXPECT_FALSE(testing::ValidateJson(bad, schema).empty());
  bad = doc;
  bad["matrix"]["ops"] = "ten";
  EXPECT_FALSE(testing::ValidateJson(bad, schema).empty());
  bad = doc;
  bad["cells"][0]["per_op"]["traps_by_kind"].erase("dr_write");
  EXPECT_FALSE(testing::ValidateJson(bad, schema).empty());
}

TEST(FormatTest, TextCsvAndSvgNameEveryVariant) {
  const BenchResult r = RunFake(TwoByTwo(), {1, 1});
  const std::string text = FormatBenchText(r), csv = FormatBenchCsv(r), svg = FormatBenchSvg(r);
  EXPECT_NE(text.find("complete: 24 of 24 runs measured"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_sig, phase sig_hndl"), std::string::npos) << text;
  // Header plus one line per cell, every line with the header's field count.
  size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, 1 + Cells(r).size());
  for (const char* name : {"baseline", "dr7=lazy", "divzero, phase divzero", " patch "}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
  testing::XmlCheck check = testing::CheckXml(svg);
  ASSERT_TRUE(check.ok) << check.error;
  for (const char* name :
       {"baseline", "dr7=lazy", "trap off", "trap patch", "divzero, phase divzero"}) {
    EXPECT_NE(check.text.find(name), std::string::npos) << name;
  }
}

// A zero time written the way results were before time_status: the run's JSON of
// a one-repetition matrix whose `variant` ran divzero (trap off) with its time at 0.
BenchResult WithAZeroTime(size_t variant) {
  Matrix m = TwoByTwo();
  m.workloads = {"divzero"};
  m.traps = {TrapMechanism::kOff};
  m.repetitions = 1;
  nlohmann::json doc = BenchToJson(RunFake(m, {1, 1}));
  for (nlohmann::json& run : doc["runs"]) {
    if (run["variant"] != m.variants[variant].name) continue;
    for (nlohmann::json& phase : run["phases"]) {
      phase.erase("time_status");
      phase.erase("clocks_agree");
      phase["wall_ns"] = 0;
      phase["tsc_cycles"] = 0;
    }
  }
  absl::StatusOr<BenchResult> parsed = BenchFromJson(doc);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *std::move(parsed) : BenchResult{};
}

TEST(UnmeasuredTimeTest, AZeroTimeIsNeitherACheapBarNorAMedian) {
  const BenchResult r = WithAZeroTime(1);
  const std::string text = FormatBenchText(r);
  testing::XmlCheck svg = testing::CheckXml(FormatBenchSvg(r));
  ASSERT_TRUE(svg.ok) << svg.error;
  EXPECT_EQ(svg.text.find("0.000x"), std::string::npos) << svg.text;
  EXPECT_NE(svg.text.find("time not measured in 1 of 1 run (below the marker calibration's noise)"),
            std::string::npos)
      << svg.text;
  EXPECT_NE(text.find("time not measured in 1 of 1 run"), std::string::npos) << text;
  EXPECT_EQ(text.find("0 ns"), std::string::npos) << text;
  // The counts of that run are still counted.
  const std::vector<Cell> cells = Cells(r);  // FindCell points into it
  const Cell* cell = FindCell(cells, r, "divzero", "divzero", "dr7=lazy", TrapMechanism::kOff);
  ASSERT_NE(cell, nullptr);
  EXPECT_EQ(cell->samples.size(), 1u);
  EXPECT_EQ(*cell->per_op.kernel_insns, 833.0);
}

TEST(UnmeasuredTimeTest, TheFirstBarWithoutATimeTakesAwayTheRatiosAndSaysSo) {
  const BenchResult r = WithAZeroTime(0);
  testing::XmlCheck svg = testing::CheckXml(FormatBenchSvg(r));
  ASSERT_TRUE(svg.ok) << svg.error;
  EXPECT_NE(svg.text.find("no ratio: the first bar's time is not measured"), std::string::npos)
      << svg.text;
  const std::string csv = FormatBenchCsv(r);
  // The first variant's row: counts, no times, no ratio, one run unmeasured (then
  // KVM's exits, which the fake has none of).
  EXPECT_NE(csv.find(",832,,,,,,,,,,1,0,"), std::string::npos) << csv;
  EXPECT_NE(FormatBenchText(r).find("unmeasured"), std::string::npos);
}

// FakeRun, but the runs of `variant` in repetition `repetition` have no time.
std::function<absl::StatusOr<RunSample>(const RunSpec&)> FakeWithUnmeasured(const Matrix& m,
                                                                            size_t variant,
                                                                            uint32_t repetition) {
  return [&m, variant, repetition](const RunSpec& spec) -> absl::StatusOr<RunSample> {
    RunSample s = FakeRun(m, spec);
    if (spec.variant == variant && spec.repetition == repetition) {
      for (PhaseSample& p : s.phases) {
        p.wall_ns.reset();
        p.tsc_cycles.reset();
      }
    }
    if (spec.variant == 1 && spec.repetition == 0) s.phases[0].clocks_agree = false;
    return s;
  };
}

TEST(UnmeasuredTimeTest, CellsCountRunsWithoutATimeAndTimeTheOthers) {
  const Matrix m = TwoByTwo();
  RunnerOptions options;
  options.host = {"pvm", true};
  const BenchResult r = RunMatrix(m, FakeWithUnmeasured(m, 0, 1), options);
  const std::vector<Cell> cells = Cells(r);
  const Cell* cell = FindCell(cells, r, "divzero", "divzero", "baseline", TrapMechanism::kPatch);
  ASSERT_NE(cell, nullptr);
  EXPECT_EQ(cell->samples.size(), 3u);
  EXPECT_EQ(cell->times_unmeasured, 1u);
  EXPECT_EQ(cell->ns.n, 2u);
  EXPECT_EQ(cell->tsc.n, 2u);
  EXPECT_TRUE(cell->counts_agree);
  EXPECT_EQ(cell->per_op.traps_by_kind.at("dr_write"), 1.0);
  const Cell* lazy = FindCell(cells, r, "divzero", "divzero", "dr7=lazy", TrapMechanism::kPatch);
  ASSERT_NE(lazy, nullptr);
  EXPECT_EQ(lazy->clocks_disagree, 1u);
  EXPECT_EQ(lazy->ns.n, 3u);  // flagged, still a time

  const nlohmann::json doc = nlohmann::json::parse(BenchToJson(r).dump());
  std::vector<std::string> errors = testing::ValidateJson(doc, LoadSchema());
  EXPECT_TRUE(errors.empty()) << errors.front();
  bool seen_null = false;
  for (const nlohmann::json& run : doc["runs"]) {
    for (const nlohmann::json& phase : run["phases"]) {
      if (!phase["wall_ns"].is_null()) continue;
      seen_null = true;
      EXPECT_TRUE(phase["tsc_cycles"].is_null());
      EXPECT_EQ(phase["time_status"], "below_calibration_noise");
    }
  }
  EXPECT_TRUE(seen_null);
  for (const nlohmann::json& c : doc["cells"]) {
    if (c["variant"] == "baseline" && c["phase"] == "divzero" && c["trap"] == "patch") {
      EXPECT_EQ(c["times_unmeasured"], 1);
      EXPECT_EQ(c["samples"], 3);
    }
  }
  const std::string text = FormatBenchText(r);
  EXPECT_NE(text.find("time not measured in 1 of 3 runs (below the marker calibration's noise); "
                      "the time is over the others"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ns and tsc_cycles disagree beyond the TSC rate in 1 of 3 runs"),
            std::string::npos)
      << text;
}

TEST(UnmeasuredTimeTest, MergeKeepsWhatIsUnmeasured) {
  const Matrix m = TwoByTwo();
  RunnerOptions options;
  options.host = {"pvm", true};
  const BenchResult full = RunMatrix(m, FakeWithUnmeasured(m, 1, 2), options);
  std::vector<BenchResult> parts;
  for (uint32_t i = 1; i <= 3; ++i) {
    RunnerOptions shard = options;
    shard.shard = {i, 3};
    const std::string text = BenchToJson(RunMatrix(m, FakeWithUnmeasured(m, 1, 2), shard)).dump();
    absl::StatusOr<BenchResult> parsed = BenchFromJson(nlohmann::json::parse(text));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    parts.push_back(*std::move(parsed));
  }
  absl::StatusOr<BenchResult> merged = MergeResults(parts);
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_EQ(merged->runs.size(), full.runs.size());
  for (size_t i = 0; i < full.runs.size(); ++i)
    EXPECT_EQ(merged->runs[i].phases, full.runs[i].phases);
  const std::vector<Cell> a = Cells(full), b = Cells(*merged);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].times_unmeasured, b[i].times_unmeasured);
    EXPECT_EQ(a[i].clocks_disagree, b[i].clocks_disagree);
    EXPECT_EQ(a[i].ns.n, b[i].ns.n);
  }
  EXPECT_EQ(FindCell(b, *merged, "lat_sig", "sig_hndl", "dr7=lazy", TrapMechanism::kOff)
                ->times_unmeasured,
            1u);
}

// ---- KVM's own exits, beside the VMM's --------------------------------------------

// FakeRun with KVM's exits: 4 per op, 5 in odd repetitions (the host's events vary), 7
// emulation failures per op, a host interrupt in the first and third repetitions; the
// VMM's exits on top.
RunSample FakeRunWithKvmExits(const Matrix& m, const RunSpec& spec) {
  RunSample sample = FakeRun(m, spec);
  for (PhaseSample& p : sample.phases) {
    p.kvm_exits = p.ops * (4 + spec.repetition % 2) + p.exits;
    p.kvm_exits_by_reason["insn_emulation_fail"] = 7 * p.ops;
    if (spec.repetition != 1) p.kvm_exits_by_reason["irq_exits"] = 1;
  }
  return sample;
}

BenchResult RunFakeWithKvmExits(const Matrix& m, Shard shard = {1, 1}) {
  RunnerOptions options;
  options.shard = shard;
  options.host = {"pvm", true};
  return RunMatrix(
      m,
      [&](const RunSpec& spec) -> absl::StatusOr<RunSample> {
        return FakeRunWithKvmExits(m, spec);
      },
      options);
}

TEST(KvmExitsTest, ARunsSampleTakesKvmsExitsWithoutWhatTheHostDoesNotKeep) {
  RunResult result;
  result.outcome = Outcome::kExited;
  result.exit_code = 0;
  for (int i = 0; i < 3; ++i) result.ledger.Record(ExitKind::kIo, "port 0x501 out", 1000);
  result.kvm_stats = {{"exits", 90}, {"io_exits", 0}, {"insn_emulation", 15000}};
  ::sigvisor::PhaseResult phase;
  phase.name = "divzero";
  phase.ops = 16;
  phase.kvm_stats = {{"exits", 70},
                     {"io_exits", 0},
                     {"insn_emulation", 13520},
                     {"insn_emulation_fail", 112},
                     {"irq_exits", 0}};
  result.phases.push_back(phase);
  RunSample sample = SampleFromResult(RunSpec{}, result, true);
  ASSERT_EQ(sample.phases.size(), 1u);
  EXPECT_EQ(sample.phases[0].exits, 0u);
  EXPECT_EQ(sample.phases[0].kvm_exits, 70u);
  const std::map<std::string, uint64_t> want = {{"insn_emulation", 13520},
                                                {"insn_emulation_fail", 112}};
  EXPECT_EQ(sample.phases[0].kvm_exits_by_reason, want);  // io_exits: not kept here

  // A host whose KVM gives no statistics: none, not zeros.
  result.kvm_stats.clear();
  result.phases[0].kvm_stats.clear();
  sample = SampleFromResult(RunSpec{}, result, true);
  EXPECT_FALSE(sample.phases[0].kvm_exits.has_value());
  EXPECT_TRUE(sample.phases[0].kvm_exits_by_reason.empty());
}

TEST(KvmExitsTest, CellsTakeTheMedianAndDoNotCallTheHostsNoiseADisagreement) {
  const Matrix m = TwoByTwo();
  const BenchResult r = RunFakeWithKvmExits(m);
  const std::vector<Cell> cells = Cells(r);
  const Cell* off = FindCell(cells, r, "divzero", "divzero", "baseline", TrapMechanism::kOff);
  ASSERT_NE(off, nullptr);
  // 4, 5 and 4 per op: the median is 4, and the counts still agree.
  EXPECT_EQ(off->kvm_exits_per_op, (std::vector<double>{4, 5, 4}));
  EXPECT_EQ(off->kvm_exits.n, 3u);
  EXPECT_EQ(off->kvm_exits.median, 4.0);
  EXPECT_EQ(off->kvm_exits.max, 5.0);
  EXPECT_TRUE(off->counts_agree);
  EXPECT_TRUE(off->mismatches.empty());
  EXPECT_EQ(off->kvm_exits_by_reason.at("insn_emulation_fail"), 7.0);
  EXPECT_EQ(off->kvm_exits_by_reason.at("irq_exits"), 0.1);  // 1 in 10 ops, 2 runs of 3
  const Cell* lazy = FindCell(cells, r, "divzero", "divzero", "dr7=lazy", TrapMechanism::kPatch);
  ASSERT_NE(lazy, nullptr);
  EXPECT_EQ(lazy->kvm_exits.median, 8.0);  // 4 of the host's + 4 segment-load exits
  EXPECT_TRUE(lazy->counts_agree);
  // Without KVM's exits in every run, none.
  const BenchResult plain = RunFake(m, {1, 1});
  const std::vector<Cell> plain_cells = Cells(plain);
  EXPECT_EQ(plain_cells[0].kvm_exits.n, 0u);
  EXPECT_TRUE(plain_cells[0].kvm_exits_per_op.empty());
}

TEST(KvmExitsTest, JsonGivesThemPerCellAndPerRunAndMergesThem) {
  const Matrix m = TwoByTwo();
  const BenchResult full = RunFakeWithKvmExits(m);
  const nlohmann::json doc = nlohmann::json::parse(BenchToJson(full).dump());
  const nlohmann::json& cell = doc["cells"][0];
  EXPECT_EQ(cell["per_op"]["exits"], 0.0);
  // Not among the exact counts of per_op, which two benches must agree on: beside the
  // times, as a summary over the runs.
  EXPECT_FALSE(cell["per_op"].contains("kvm_exits"));
  EXPECT_EQ(cell["kvm_exits_per_op"]["median"], 4.0);
  EXPECT_EQ(cell["kvm_exits_per_op"]["min"], 4.0);
  EXPECT_EQ(cell["kvm_exits_per_op"]["max"], 5.0);
  EXPECT_EQ(cell["kvm_exits_by_reason_per_op"],
            nlohmann::json({{"irq_exits", 0.1}, {"insn_emulation_fail", 7.0}}));
  const nlohmann::json& phase = doc["runs"][0]["phases"][0];
  EXPECT_EQ(phase["kvm_exits"], 40);
  EXPECT_EQ(phase["kvm_exits_by_reason"],
            nlohmann::json({{"irq_exits", 1}, {"insn_emulation_fail", 70}}));
  std::vector<std::string> errors = testing::ValidateJson(doc, LoadSchema());
  EXPECT_TRUE(errors.empty()) << errors.front();

  std::vector<BenchResult> parts;
  for (uint32_t i = 1; i <= 2; ++i) {
    absl::StatusOr<BenchResult> parsed =
        BenchFromJson(nlohmann::json::parse(BenchToJson(RunFakeWithKvmExits(m, {i, 2})).dump()));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    parts.push_back(*std::move(parsed));
  }
  absl::StatusOr<BenchResult> merged = MergeResults(parts);
  ASSERT_TRUE(merged.ok()) << merged.status();
  for (size_t i = 0; i < full.runs.size(); ++i) {
    EXPECT_EQ(merged->runs[i].phases, full.runs[i].phases);
  }

  // A result written before KVM's exits were reported: none, and still valid.
  nlohmann::json old = BenchToJson(RunFake(m, {1, 1}));
  for (nlohmann::json& run : old["runs"]) {
    for (nlohmann::json& p : run["phases"]) {
      p.erase("kvm_exits");
      p.erase("kvm_exits_by_reason");
    }
  }
  for (nlohmann::json& c : old["cells"]) {
    c.erase("kvm_exits_per_op");
    c.erase("kvm_exits_by_reason_per_op");
  }
  errors = testing::ValidateJson(nlohmann::json::parse(old.dump()), LoadSchema());
  EXPECT_TRUE(errors.empty()) << errors.front();
  absl::StatusOr<BenchResult> parsed = BenchFromJson(old);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->runs[0].phases[0].kvm_exits.has_value());
  const nlohmann::json rewritten = BenchToJson(*parsed);
  EXPECT_TRUE(rewritten["cells"][0]["kvm_exits_per_op"].is_null());
  EXPECT_TRUE(rewritten["cells"][0]["kvm_exits_by_reason_per_op"].is_null());
}

TEST(KvmExitsTest, TextHasOneColumnBesideTheVmmsExits) {
  Matrix m = TwoByTwo();
  m.workloads = {"divzero"};
  const std::string text = FormatBenchText(RunFakeWithKvmExits(m));
  EXPECT_NE(text.find("runs kernel_insns  exits kvm exits/op  traps"), std::string::npos) << text;
  // baseline, trap off: 832 kernel insns, 0 exits, 4 of KVM's.
  EXPECT_NE(text.find("off        3          832      0            4      0"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("kvm exits/op is -"), std::string::npos) << text;
  // Without them: a dash, and why, once.
  const std::string plain = FormatBenchText(RunFake(m, {1, 1}));
  EXPECT_NE(plain.find("off        3          832      0            -      0"), std::string::npos)
      << plain;
  const size_t note = plain.find("kvm exits/op is - where the runs have no KVM exits");
  ASSERT_NE(note, std::string::npos) << plain;
  EXPECT_EQ(plain.find("kvm exits/op is -", note + 1), std::string::npos) << plain;
}

TEST(KvmExitsTest, CsvHasAColumnForThemAndOnePerReason) {
  Matrix m = TwoByTwo();
  m.workloads = {"divzero"};
  const std::string csv = FormatBenchCsv(RunFakeWithKvmExits(m));
  const std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_NE(header.find(",times_unmeasured,clocks_disagree,kvm_exits_per_op,kvm_io_exits_per_op,"
                        "kvm_mmio_exits_per_op,"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find(",kvm_insn_emulation_fail_per_op,kvm_l1d_flush_per_op"), std::string::npos)
      << header;
  // baseline, trap off: 4 per op; by reason, 0 where no run had it, 0.1 irq_exits, 7
  // emulation failures.
  const std::string row = csv.substr(csv.find("\ndivzero,divzero,baseline,") + 1);
  EXPECT_NE(row.substr(0, row.find('\n')).find(",0,0,4,0,0,0,0,0.1,0,0,0,0,0,0,0,7,0"),
            std::string::npos)
      << row;
  // Without them: empty fields, as for any figure there is not.
  const std::string plain = FormatBenchCsv(RunFake(m, {1, 1}));
  EXPECT_NE(plain.find(",0,0" + std::string(15, ',') + "\n"), std::string::npos) << plain;
}

// A matrix of one workload across CPUs on two IPI ways of two vCPUs and the one-vCPU
// baseline's sigpingpong; the guest counts one IPI per op taken on each vCPU, and vCPU
// 1's interrupts are re-injected once in repetition 1.
Matrix SmpMatrix() {
  Matrix m;
  m.workloads = {"xcpu_pingpong"};
  VariantInfo x2apic{"smp=on@vcpus=2@ipi=x2apic", "smp=on", 100, "0x0000000000000003"};
  x2apic.vcpus = 2;
  x2apic.ipi = "x2apic";
  VariantInfo pv = x2apic;
  pv.name = "smp=on@vcpus=2@ipi=pv";
  pv.ipi = "pv";
  m.variants = {x2apic, pv};
  m.traps = {TrapMechanism::kOff};
  m.repetitions = 3;
  m.ops = 10;
  return m;
}

// guest_ipis false: a guest that does not count its IPIs.
RunSample FakeSmpRun(const Matrix& m, const RunSpec& spec, bool guest_ipis = true) {
  RunSample sample;
  sample.spec = spec;
  sample.outcome = "exited";
  const bool pv = m.variants[spec.variant].ipi == "pv";
  PhaseSample p;
  p.name = "xcpu_pingpong";
  p.ops = m.ops;
  p.exits = pv ? m.ops : 0;
  p.wall_ns = m.ops * (pv ? 9000 : 6000);
  p.tsc_cycles = *p.wall_ns * 2;
  const std::optional<uint64_t> ipis = guest_ipis ? std::optional<uint64_t>(m.ops) : std::nullopt;
  p.vcpus = {{.vcpu = 0, .exits = p.exits, .ipis = ipis, .interrupts = m.ops},
             {.vcpu = 1,
              .exits = pv ? m.ops : 0,
              .ipis = ipis,
              .interrupts = m.ops + (spec.repetition == 1 ? 1 : 0)}};
  sample.phases.push_back(p);
  return sample;
}

BenchResult RunFakeSmp(const Matrix& m, Shard shard = {1, 1}, bool guest_ipis = true) {
  RunnerOptions options;
  options.shard = shard;
  options.host = {"hardware", false};
  return RunMatrix(
      m,
      [&](const RunSpec& spec) -> absl::StatusOr<RunSample> {
        return FakeSmpRun(m, spec, guest_ipis);
      },
      options);
}

TEST(VcpusTest, ARunsSampleTakesEachVcpusExitsAndInterrupts) {
  RunResult result;
  result.outcome = Outcome::kExited;
  ::sigvisor::PhaseResult phase;
  phase.name = "xcpu_kick";
  phase.ops = 8;
  phase.exits_total = 8;
  phase.kvm_stats = {{"irq_injections", 8}, {"exits", 30}};
  phase.other_vcpus = {{.vcpu = 1,
                        .exits = {{"io", 6}, {"hlt", 2}},
                        .kvm_stats = {{"irq_injections", 9}, {"exits", 20}}}};
  // The guest's count: 8 taken on each, where KVM injected 9 into vCPU 1 (a re-injection).
  phase.guest_ipis = {{.sent = 8, .received = 8}, {.sent = 8, .received = 8}};
  result.phases.push_back(phase);
  RunSample sample = SampleFromResult(RunSpec{}, result, false);
  ASSERT_EQ(sample.phases[0].vcpus.size(), 2u);
  EXPECT_EQ(sample.phases[0].vcpus[0],
            (VcpuPhaseSample{.vcpu = 0, .exits = 8, .ipis = 8, .interrupts = 8}));
  EXPECT_EQ(sample.phases[0].vcpus[1],
            (VcpuPhaseSample{.vcpu = 1, .exits = 8, .ipis = 8, .interrupts = 9}));
  // KVM without the statistic: no interrupts, not 0. A guest that does not count its
  // IPIs: no ipis, not 0.
  result.phases[0].kvm_stats.clear();
  result.phases[0].other_vcpus[0].kvm_stats.clear();
  result.phases[0].guest_ipis.clear();
  sample = SampleFromResult(RunSpec{}, result, false);
  EXPECT_FALSE(sample.phases[0].vcpus[1].interrupts.has_value());
  EXPECT_FALSE(sample.phases[0].vcpus[0].ipis.has_value());
  EXPECT_FALSE(sample.phases[0].vcpus[1].ipis.has_value());
  // One vCPU: none.
  result.phases[0].other_vcpus.clear();
  EXPECT_TRUE(SampleFromResult(RunSpec{}, result, false).phases[0].vcpus.empty());
}

TEST(VcpusTest, CellsTakeEachVcpusMedians) {
  const Matrix m = SmpMatrix();
  const BenchResult r = RunFakeSmp(m);
  const std::vector<Cell> cells = Cells(r);
  const Cell* pv = FindCell(cells, r, "xcpu_pingpong", "xcpu_pingpong", "smp=on@vcpus=2@ipi=pv",
                            TrapMechanism::kOff);
  ASSERT_NE(pv, nullptr);
  ASSERT_EQ(pv->vcpus.size(), 2u);
  EXPECT_EQ(pv->vcpus[1].vcpu, 1);
  EXPECT_EQ(pv->vcpus[1].exits, 1.0);
  EXPECT_EQ(*pv->vcpus[1].interrupts, 1.0);  // the median: 1, 1.1, 1
  EXPECT_EQ(*pv->vcpus[1].ipis, 1.0);        // the guest's count: 1 in every run
  EXPECT_EQ(*pv->vcpus[0].ipis, 1.0);
  EXPECT_TRUE(pv->counts_agree);
  // A guest that does not count its IPIs: none, not 0.
  const BenchResult plain = RunFakeSmp(m, {1, 1}, false);
  const std::vector<Cell> plain_cells = Cells(plain);
  const Cell* plain_pv = FindCell(plain_cells, plain, "xcpu_pingpong", "xcpu_pingpong",
                                  "smp=on@vcpus=2@ipi=pv", TrapMechanism::kOff);
  ASSERT_NE(plain_pv, nullptr);
  ASSERT_EQ(plain_pv->vcpus.size(), 2u);
  EXPECT_FALSE(plain_pv->vcpus[1].ipis.has_value());
  EXPECT_EQ(*plain_pv->vcpus[1].interrupts, 1.0);
}

TEST(VcpusTest, JsonValidatesAndMergesWithTheMachine) {
  const Matrix m = SmpMatrix();
  const nlohmann::json doc = nlohmann::json::parse(BenchToJson(RunFakeSmp(m)).dump());
  const std::vector<std::string> errors = testing::ValidateJson(doc, LoadSchema());
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(doc["matrix"]["variants"][1]["vcpus"], 2);
  EXPECT_EQ(doc["matrix"]["variants"][1]["ipi"], "pv");
  EXPECT_EQ(doc["cells"][1]["vcpus_per_op"][1]["exits"], 1.0);
  EXPECT_EQ(doc["cells"][1]["vcpus_per_op"][1]["ipis"], 1.0);
  EXPECT_EQ(doc["runs"][0]["phases"][0]["vcpus"][1]["interrupts"], 10);
  EXPECT_EQ(doc["runs"][0]["phases"][0]["vcpus"][1]["ipis"], 10);
  // A guest that does not count its IPIs: null, and the document still validates.
  const nlohmann::json uncounted =
      nlohmann::json::parse(BenchToJson(RunFakeSmp(m, {1, 1}, false)).dump());
  const std::vector<std::string> uncounted_errors = testing::ValidateJson(uncounted, LoadSchema());
  EXPECT_TRUE(uncounted_errors.empty()) << uncounted_errors.front();
  EXPECT_TRUE(uncounted["cells"][1]["vcpus_per_op"][1]["ipis"].is_null());
  EXPECT_TRUE(uncounted["runs"][0]["phases"][0]["vcpus"][1]["ipis"].is_null());
  // A result written before the guest's count (no ipis at all) still loads, without it.
  nlohmann::json older = doc;
  for (nlohmann::json& run : older["runs"]) {
    for (nlohmann::json& phase : run["phases"]) {
      for (nlohmann::json& vcpu : phase["vcpus"]) vcpu.erase("ipis");
    }
  }
  for (nlohmann::json& cell : older["cells"]) {
    for (nlohmann::json& vcpu : cell["vcpus_per_op"]) vcpu.erase("ipis");
  }
  const std::vector<std::string> older_errors = testing::ValidateJson(older, LoadSchema());
  EXPECT_TRUE(older_errors.empty()) << older_errors.front();
  absl::StatusOr<BenchResult> older_back = BenchFromJson(older);
  ASSERT_TRUE(older_back.ok()) << older_back.status();
  EXPECT_FALSE(older_back->runs[0].phases[0].vcpus[1].ipis.has_value());
  EXPECT_EQ(older_back->runs[0].phases[0].vcpus[1].interrupts, uint64_t{10});
  // A one-vCPU result has none of the new members (its documents are as before).
  const nlohmann::json plain = BenchToJson(RunFake(TwoByTwo(), {1, 1}));
  EXPECT_FALSE(plain["matrix"]["variants"][0].contains("vcpus"));
  EXPECT_FALSE(plain["cells"][0].contains("vcpus_per_op"));
  EXPECT_FALSE(plain["runs"][0]["phases"][0].contains("vcpus"));
  // Shards through JSON merge to what one run gave.
  std::vector<BenchResult> parts;
  for (uint32_t i : {2u, 1u}) {
    absl::StatusOr<BenchResult> back =
        BenchFromJson(nlohmann::json::parse(BenchToJson(RunFakeSmp(m, {i, 2})).dump()));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->matrix.variants[1].vcpus, 2);
    EXPECT_EQ(back->matrix.variants[1].ipi, "pv");
    parts.push_back(*std::move(back));
  }
  absl::StatusOr<BenchResult> merged = MergeResults(parts);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(BenchToJson(*merged)["cells"], BenchToJson(RunFakeSmp(m))["cells"]);
}

// The x2apic way twice, on KVM's local APICs and on the VMM's (@lapic=vmm).
Matrix LapicMatrix() {
  Matrix m = SmpMatrix();
  VariantInfo vmm = m.variants[0];
  vmm.name += "@lapic=vmm";
  vmm.lapic = "vmm";
  m.variants[1] = vmm;
  return m;
}

TEST(VcpusTest, TheLocalApicsGoIntoTheJsonAndBack) {
  const Matrix m = LapicMatrix();
  const nlohmann::json doc = nlohmann::json::parse(BenchToJson(RunFakeSmp(m)).dump());
  const std::vector<std::string> errors = testing::ValidateJson(doc, LoadSchema());
  EXPECT_TRUE(errors.empty()) << errors.front();
  // Only where the spec named them, as "ipi".
  EXPECT_FALSE(doc["matrix"]["variants"][0].contains("lapic"));
  EXPECT_EQ(doc["matrix"]["variants"][1]["name"], "smp=on@vcpus=2@ipi=x2apic@lapic=vmm");
  EXPECT_EQ(doc["matrix"]["variants"][1]["lapic"], "vmm");
  // Not a LapicName: the schema refuses it.
  nlohmann::json bad = doc;
  bad["matrix"]["variants"][1]["lapic"] = "qemu";
  EXPECT_FALSE(testing::ValidateJson(bad, LoadSchema()).empty());
  // Shards through JSON keep it, and merge to what one run gave.
  std::vector<BenchResult> parts;
  for (uint32_t i : {2u, 1u}) {
    absl::StatusOr<BenchResult> back =
        BenchFromJson(nlohmann::json::parse(BenchToJson(RunFakeSmp(m, {i, 2})).dump()));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->matrix.variants, m.variants);
    parts.push_back(*std::move(back));
  }
  absl::StatusOr<BenchResult> merged = MergeResults(parts);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->matrix.variants[1].lapic, "vmm");
  const auto full = BenchToJson(RunFakeSmp(m));
  EXPECT_EQ(BenchToJson(*merged)["matrix"], full["matrix"]);
  EXPECT_EQ(BenchToJson(*merged)["cells"], full["cells"]);
}

TEST(VcpusTest, TextHasALinePerCellOfSeveralVcpusAndCsvAColumnPerFigure) {
  const BenchResult r = RunFakeSmp(SmpMatrix());
  const std::string text = FormatBenchText(r);
  EXPECT_NE(text.find("smp=on@vcpus=2@ipi=pv"), std::string::npos) << text;
  EXPECT_NE(text.find("      per op, by vCPU: vCPU 0 1 exits, 1 IPIs, 1 interrupts; vCPU 1 1 "
                      "exits, 1 IPIs, 1 interrupts\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("per op, by vCPU: vCPU 0 0 exits, 1 IPIs"), std::string::npos) << text;
  const std::string csv = FormatBenchCsv(r);
  const std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_NE(header.find(",vcpu0_exits_per_op,vcpu0_ipis_per_op,vcpu0_interrupts_per_op,"
                        "vcpu1_exits_per_op,vcpu1_ipis_per_op,vcpu1_interrupts_per_op"),
            std::string::npos)
      << header;
  EXPECT_EQ(header.rfind("vcpu1_interrupts_per_op"), header.size() - 23);
  EXPECT_NE(csv.find(",1,1,1,1,1,1\n"), std::string::npos) << csv;
  // A guest that does not count its IPIs: the line as before, and empty IPI cells.
  const BenchResult uncounted = RunFakeSmp(SmpMatrix(), {1, 1}, false);
  const std::string uncounted_text = FormatBenchText(uncounted);
  EXPECT_NE(uncounted_text.find("      per op, by vCPU: vCPU 0 1 exits, 1 interrupts; vCPU 1 1 "
                                "exits, 1 interrupts\n"),
            std::string::npos)
      << uncounted_text;
  EXPECT_EQ(uncounted_text.find("IPIs"), std::string::npos) << uncounted_text;
  const std::string uncounted_csv = FormatBenchCsv(uncounted);
  EXPECT_NE(uncounted_csv.find(",1,,1,1,,1\n"), std::string::npos) << uncounted_csv;
  // One vCPU: neither the line nor the columns.
  const BenchResult plain = RunFake(TwoByTwo(), {1, 1});
  EXPECT_EQ(FormatBenchText(plain).find("by vCPU"), std::string::npos);
  EXPECT_EQ(FormatBenchCsv(plain).find("vcpu0_"), std::string::npos);
}

}  // namespace
}  // namespace sigvisor::bench
