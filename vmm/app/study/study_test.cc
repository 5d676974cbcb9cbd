#include "vmm/app/study/study.h"

#include <gtest/gtest.h>

#include <fstream>

#include "vmm/app/bench/runner.h"
#include "vmm/app/bench/stats.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/app/study/bloat.h"
#include "vmm/app/study/object_stats.h"
#include "vmm/report/testing/json_schema.h"
#include "vmm/report/testing/xml_check.h"

namespace sigvisor::study {
namespace {

// A fake boot with the counts of the real kernels' shape: the new build differs in
// kernel instructions and traps as the real one does, and is faster by `speedup`.
absl::StatusOr<bench::RunSample> FakeRun(const bench::Matrix& m, const bench::RunSpec& spec) {
  bench::RunSample sample;
  sample.spec = spec;
  sample.outcome = "exited";
  const std::string& workload = m.workloads[spec.workload];
  const bool is_new = spec.variant == 1, trapped = m.traps[spec.trap] == TrapMechanism::kPatch;
  std::vector<std::pair<std::string, uint64_t>> phases;  // name, kernel insns per op
  if (workload == "divzero") phases = {{"divzero", is_new ? 833 : 832}};
  // The pv build's unconditional write is a call of 36 instructions into the page.
  if (workload == "divzero" && m.traps[spec.trap] == TrapMechanism::kPv && !is_new) {
    phases = {{"divzero", 868}};
  }
  if (workload == "pipe_rw") phases = {{"pipe_rw", is_new ? 559 : 569}};
  if (workload == "lat_sig") phases = {{"sig_inst", 197}, {"sig_hndl", is_new ? 701 : 844}};
  if (workload == "sigpingpong") phases = {{"sigpingpong", is_new ? 2271 : 2291}};
  for (const auto& [name, insns] : phases) {
    bench::PhaseSample p;
    p.name = name;
    p.ops = m.ops;
    p.kernel_insns = insns * m.ops;
    if (m.traps[spec.trap] == TrapMechanism::kPv && workload == "divzero" && !is_new) {
      p.traps["dr_write"] = m.ops;  // counted in the pv page: no exit, no segment loads
    }
    if (trapped) {
      if (workload == "divzero" && !is_new) p.traps["dr_write"] = m.ops;
      if (workload == "divzero") p.traps["segment_load"] = 4 * m.ops;
      if (workload == "pipe_rw" && !is_new) p.traps["segment_load"] = 4 * m.ops;
      p.exits = p.traps_total();
    }
    // Times: the new build 10% faster, with a little run-to-run spread.
    p.wall_ns = m.ops * (insns * 1000 * (is_new ? 90 : 100) / 100 + 500 * (spec.repetition % 3));
    p.tsc_cycles = 2 * *p.wall_ns;
    sample.phases.push_back(p);
  }
  return sample;
}

StudyReport FakeStudy(const StudyDef& def, uint32_t repetitions = 5,
                      bench::HostInfoSummary host = {"pvm", true}) {
  absl::StatusOr<bench::Matrix> m = StudyMatrix(def, 10, repetitions, {}, 32);
  EXPECT_TRUE(m.ok()) << m.status();
  bench::RunnerOptions options;
  options.host = host;
  const bench::Matrix matrix = *m;
  return AnalyzeStudy(
      def, bench::RunMatrix(
               matrix, [&](const bench::RunSpec& s) { return FakeRun(matrix, s); }, options));
}

const Comparison* Find(const StudyReport& r, const std::string& metric, const std::string& phase,
                       TrapMechanism trap) {
  for (const Comparison& c : r.comparisons) {
    if (c.metric == metric && c.phase == phase && c.trap == trap) return &c;
  }
  return nullptr;
}

TEST(StudyTest, ParsesNames) {
  EXPECT_EQ(ParseStudyNames(std::vector<std::string>{"all"})->size(), 4u);
  EXPECT_EQ((*ParseStudyNames(std::vector<std::string>{"cerr", "dr7"}))[0]->name, "cerr");
  for (std::vector<std::string> bad :
       {std::vector<std::string>{}, {"nope"}, {"all", "dr7"}, {"dr7", "dr7"}}) {
    EXPECT_FALSE(ParseStudyNames(bad).ok());
  }
}

TEST(StudyTest, EveryStudyComparesTheBaselineWithItsSeedsVariant) {
  for (const StudyDef& def : Studies()) {
    absl::StatusOr<bench::Matrix> m = StudyMatrix(def, std::nullopt, std::nullopt, {}, 32);
    ASSERT_TRUE(m.ok()) << def.name << ": " << m.status();
    ASSERT_EQ(m->variants.size(), 2u);
    EXPECT_EQ(m->variants[0].name, "baseline");
    EXPECT_EQ(m->workloads.size(), 1u);
    absl::StatusOr<const KernelVariant*> v = ResolveVariant(m->variants[1].name);
    ASSERT_TRUE(v.ok());
    // The new build differs from the baseline in exactly the seed's switch.
    int differences = 0;
    for (size_t i = 0; i < SeedSwitches().size(); ++i) {
      if ((*v)->values[i] != SeedSwitches()[i].old_value) {
        ++differences;
        EXPECT_EQ(SeedSwitches()[i].seed, def.seed) << def.name;
      }
    }
    EXPECT_EQ(differences, 1) << def.name;
  }
}

TEST(StudyTest, Dr7VerdictsFollowTheCounts) {
  StudyReport r = FakeStudy(*FindStudy("dr7"));
  ASSERT_TRUE(r.complete());
  const Comparison* dr = Find(r, "dr_write_traps_per_op", "divzero", TrapMechanism::kPatch);
  ASSERT_NE(dr, nullptr);
  EXPECT_EQ(dr->old_value, 1);
  EXPECT_EQ(dr->new_value, 0);
  EXPECT_EQ(dr->agrees(), true);
  const Comparison* insns = Find(r, "kernel_insns_per_op", "divzero", TrapMechanism::kOff);
  ASSERT_NE(insns, nullptr);
  EXPECT_EQ(insns->agrees(), false);  // one more instruction: against the seed
  const Comparison* time = Find(r, "ns_per_op_median", "divzero", TrapMechanism::kOff);
  ASSERT_NE(time, nullptr);
  EXPECT_LT(*time->p_value, 0.05);
  EXPECT_EQ(time->agrees(), true);
  EXPECT_NE(r.text.find("With unconditional write (baseline):"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("With unlikely write (dr7=lazy):"), std::string::npos);
  EXPECT_NE(r.text.find("FINDING: kernel instructions (trap off): 832 -> 833 (+1)"),
            std::string::npos)
      << r.text;
  // pv: the same DR7 writes per signal as patch, and no exit for them.
  const Comparison* pv_dr = Find(r, "dr_write_traps_per_op", "divzero", TrapMechanism::kPv);
  ASSERT_NE(pv_dr, nullptr);
  EXPECT_EQ(pv_dr->old_value, 1);
  EXPECT_EQ(pv_dr->new_value, 0);
  EXPECT_EQ(pv_dr->agrees(), true);
  const Comparison* pv_exits = Find(r, "exits_per_op", "divzero", TrapMechanism::kPv);
  ASSERT_NE(pv_exits, nullptr);
  EXPECT_EQ(pv_exits->old_value, 0);
  EXPECT_EQ(pv_exits->agrees(), std::nullopt);  // the seed's exit claim is patch's
  EXPECT_NE(r.text.find("trap pv: "), std::string::npos);
  EXPECT_NE(r.text.find("build's skipped write saves 35 kernel instructions per signal"),
            std::string::npos)
      << r.text;
}

TEST(StudyTest, CerrShowsTheObjectSizeAndStack) {
  StudyReport r = FakeStudy(*FindStudy("cerr"));
  EXPECT_NE(r.text.find("$ size signal_*"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("sig\n"), std::string::npos);
  ASSERT_TRUE(r.extra.contains("object"));
  EXPECT_LT(r.extra["object"]["new"]["text"].get<uint64_t>(),
            r.extra["object"]["old"]["text"].get<uint64_t>());
  const Comparison* stack = nullptr;
  for (const Comparison& c : r.comparisons) {
    if (c.metric == "frame_setup_stack_bytes") stack = &c;
  }
  ASSERT_NE(stack, nullptr);
  EXPECT_GT(stack->old_value, 0);
  const Comparison* hndl = Find(r, "kernel_insns_per_op", "sig_hndl", TrapMechanism::kOff);
  ASSERT_NE(hndl, nullptr);
  EXPECT_EQ(hndl->agrees(), true);
  const Comparison* inst = Find(r, "kernel_insns_per_op", "sig_inst", TrapMechanism::kOff);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->agrees(), true);  // the seed: no change; equal counts
}

// `--repetitions 2`: the new build's times differ by 10% (the seed saw no change for
// sig inst), but two runs against two cannot be significant: no verdict reads
// agreement into that, and the exact counts carry no significance at all.
TEST(StudyTest, TwoRunsGiveNoEvidenceAndCountsNoSignificance) {
  StudyReport r = FakeStudy(*FindStudy("cerr"), 2);
  const Comparison* inst = Find(r, "ns_per_op_median", "sig_inst", TrapMechanism::kOff);
  ASSERT_NE(inst, nullptr);
  EXPECT_EQ(inst->seed.direction, Direction::kSame);
  EXPECT_EQ(inst->agrees(), std::nullopt);
  EXPECT_NE(inst->Verdict().find("too few runs for significance (p cannot go below 0.33)"),
            std::string::npos)
      << inst->Verdict();
  EXPECT_EQ(r.text.find("agrees with the seed (p="), std::string::npos) << r.text;
  const nlohmann::json doc = nlohmann::json::parse(StudiesToJson({r}).dump());
  for (const nlohmann::json& c : doc["studies"][0]["comparisons"]) {
    SCOPED_TRACE(c["metric"].get<std::string>());
    if (c["exact"].get<bool>()) {
      EXPECT_TRUE(c["significant"].is_null());
    } else {
      EXPECT_EQ(c["significant"], false);
    }
  }
}

// With nothing trapping, privileged instructions run as the rest of guest CPL0 does:
// emulated on a PVM host, on the CPU on a hardware one.
TEST(StudyTest, TrapOffIsWordedForTheHostKind) {
  const std::string emulated = "privileged instructions run emulated with the rest of guest CPL0";
  StudyReport pvm = FakeStudy(*FindStudy("dr7"), 3);
  EXPECT_NE(pvm.text.find(emulated), std::string::npos) << pvm.text;
  StudyReport hardware = FakeStudy(*FindStudy("dr7"), 3, {"hardware", false});
  EXPECT_EQ(hardware.text.find(emulated), std::string::npos) << hardware.text;
  EXPECT_NE(
      hardware.text.find("privileged instructions run on the CPU with the rest of guest CPL0"),
      std::string::npos)
      << hardware.text;
}

TEST(StudyTest, DequeueShowsMeanStddevAndBloat) {
  StudyReport r = FakeStudy(*FindStudy("dequeue"));
  EXPECT_NE(r.text.find("mean:"), std::string::npos);
  EXPECT_NE(r.text.find("stddev:"), std::string::npos);
  EXPECT_NE(r.text.find("add/remove:"), std::string::npos);
  ASSERT_TRUE(r.extra.contains("bloat"));
}

TEST(StudyTest, JsonCsvAndSvgOfAllStudies) {
  std::vector<StudyReport> reports;
  for (const StudyDef& def : Studies()) reports.push_back(FakeStudy(def, 3));
  std::ifstream file("docs/schema/sigvisor.study-1.schema.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json schema = nlohmann::json::parse(file);
  const nlohmann::json doc = nlohmann::json::parse(StudiesToJson(reports).dump());
  const std::vector<std::string> errors = testing::ValidateJson(doc, schema);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(doc["complete"].get<bool>());
  EXPECT_EQ(doc["studies"].size(), 4u);

  const std::string csv = StudiesToCsv(reports);
  size_t lines = 0, rows = 0;
  for (char c : csv) lines += c == '\n';
  for (const StudyReport& r : reports) rows += r.comparisons.size();
  EXPECT_EQ(lines, rows + 1);

  testing::XmlCheck svg = testing::CheckXml(StudiesToSvg(reports));
  ASSERT_TRUE(svg.ok) << svg.error;
  for (const char* name :
       {"baseline", "dr7=lazy", "pda=direct", "uaccess=cerr", "dequeue=pointer"}) {
    EXPECT_NE(svg.text.find(name), std::string::npos) << name;
  }
}

// Issue 30: `study cerr --inject ...` printed figures that included the injections'
// effect and never said so. The text names the specs and the seed above the tables,
// what came of them over the runs, and the VM-level table's title says it again.
TEST(StudyTest, TheTextSaysWhichInjectionsTheFiguresInclude) {
  const StudyDef& def = *FindStudy("cerr");
  const bench::Matrix m = *StudyMatrix(def, 10, 3, {}, 32);
  bench::RunnerOptions options;
  options.host = {"pvm", true};
  auto injecting = [&](const bench::RunSpec& s) -> absl::StatusOr<bench::RunSample> {
    absl::StatusOr<bench::RunSample> run = FakeRun(m, s);
    if (run.ok()) run->injections["delivered"] = 1;
    return run;
  };
  StudyReport r = AnalyzeStudy(def, bench::RunMatrix(m, injecting, options),
                               {{"sig=usr1,op=2,phase=sig_hndl", "page=evict,random,count=3"}, 42});
  const size_t note = r.text.find(
      "INJECTED: every run made the same injections: --inject sig=usr1,op=2,phase=sig_hndl "
      "--inject page=evict,random,count=3 (--seed 42); every figure and table below includes "
      "what they did (6 delivered over 6 runs)");
  ASSERT_NE(note, std::string::npos) << r.text;
  // Above the seed's table and the VM-level figures.
  EXPECT_LT(note, r.text.find("Processor, Processes")) << r.text;
  EXPECT_NE(r.text.find("(baseline -> uaccess=cerr), the injections above included:"),
            std::string::npos)
      << r.text;
  // Without --inject, neither.
  StudyReport plain = FakeStudy(def, 3);
  EXPECT_EQ(plain.text.find("INJECTED"), std::string::npos) << plain.text;
  EXPECT_EQ(plain.text.find("injections above"), std::string::npos) << plain.text;
}

TEST(StudyTest, AnIncompleteStudyStillReportsWhatRan) {
  const StudyDef& def = *FindStudy("pda");
  const bench::Matrix m = *StudyMatrix(def, 10, 4, {}, 32);
  bench::RunnerOptions options;
  options.host = {"pvm", true};
  int calls = 0;
  options.stop_requested = [&] { return ++calls > 6; };
  StudyReport r =
      AnalyzeStudy(def, bench::RunMatrix(
                            m, [&](const bench::RunSpec& s) { return FakeRun(m, s); }, options));
  EXPECT_FALSE(r.complete());
  EXPECT_NE(r.text.find("INCOMPLETE: 6 of 16 runs measured"), std::string::npos) << r.text;
  EXPECT_NE(Find(r, "kernel_insns_per_op", "pipe_rw", TrapMechanism::kOff), nullptr);
}

TEST(StudyTest, TimesTheCalibrationSwallowedAreCountedNotCompared) {
  const StudyDef& def = *FindStudy("dr7");
  const bench::Matrix m = *StudyMatrix(def, 10, 5, {}, 32);
  bench::RunnerOptions options;
  options.host = {"pvm", true};
  // Every run of the new build without traps, and one of the old build with them,
  // have no time.
  StudyReport r =
      AnalyzeStudy(def, bench::RunMatrix(
                            m,
                            [&](const bench::RunSpec& s) -> absl::StatusOr<bench::RunSample> {
                              absl::StatusOr<bench::RunSample> run = FakeRun(m, s);
                              const bool trapped = m.traps[s.trap] == TrapMechanism::kPatch;
                              if ((s.variant == 1 && !trapped) ||
                                  (s.variant == 0 && trapped && s.repetition == 3)) {
                                for (bench::PhaseSample& p : run->phases) {
                                  p.wall_ns.reset();
                                  p.tsc_cycles.reset();
                                }
                              }
                              return run;
                            },
                            options));
  EXPECT_EQ(Find(r, "ns_per_op_median", "divzero", TrapMechanism::kOff), nullptr);
  EXPECT_NE(Find(r, "kernel_insns_per_op", "divzero", TrapMechanism::kOff),
            nullptr);  // counts still count
  const Comparison* patched = Find(r, "ns_per_op_median", "divzero", TrapMechanism::kPatch);
  ASSERT_NE(patched, nullptr);
  EXPECT_TRUE(patched->p_value.has_value());
  EXPECT_NE(r.text.find("WARNING: divzero, dr7=lazy, trap off: time not measured in 5 of 5 runs "
                        "(below the marker calibration's noise)"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("WARNING: divzero, baseline, trap patch: time not measured in 1 of 5 runs"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("  time not measured (below the marker calibration's noise) / 8330 kernel "
                        "insns"),
            std::string::npos)
      << r.text;
  testing::XmlCheck svg = testing::CheckXml(StudiesToSvg({r}));
  ASSERT_TRUE(svg.ok) << svg.error;
  EXPECT_EQ(svg.text.find("0.000x"), std::string::npos) << svg.text;
  EXPECT_NE(svg.text.find("time not measured in 5 of 5 runs"), std::string::npos) << svg.text;
  std::ifstream file("docs/schema/sigvisor.study-1.schema.json");
  ASSERT_TRUE(file.good());
  const std::vector<std::string> errors = testing::ValidateJson(
      nlohmann::json::parse(StudiesToJson({r}).dump()), nlohmann::json::parse(file));
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// KVM's own exits, beside the VMM's: a figure under every trap mechanism, right after
// the VMM's exits where the study shows them, with p from the runs (KVM counts the
// host's events too) and no verdict (the seeds ran without a hypervisor).
TEST(StudyTest, KvmsOwnExitsSitBesideTheVmms) {
  const StudyDef& def = *FindStudy("dr7");
  const bench::Matrix m = *StudyMatrix(def, 10, 5, {}, 32);
  bench::RunnerOptions options;
  options.host = {"pvm", true};
  auto with_kvm_exits = [&](const bench::RunSpec& s) -> absl::StatusOr<bench::RunSample> {
    absl::StatusOr<bench::RunSample> run = FakeRun(m, s);
    for (bench::PhaseSample& p : run->phases) {
      // 4.4 per op, 4.5 in odd repetitions; the VMM's exits on top.
      p.kvm_exits = 44 + s.repetition % 2 + p.exits;
      p.kvm_exits_by_reason["insn_emulation_fail"] = 7 * p.ops;
    }
    return run;
  };
  StudyReport r = AnalyzeStudy(def, bench::RunMatrix(m, with_kvm_exits, options));
  for (TrapMechanism trap : m.traps) {
    const Comparison* kvm = Find(r, "kvm_exits_per_op", "divzero", trap);
    ASSERT_NE(kvm, nullptr) << TrapMechanismName(trap);
    EXPECT_FALSE(kvm->exact);
    EXPECT_TRUE(kvm->p_value.has_value());
    EXPECT_EQ(kvm->agrees(), std::nullopt);
    EXPECT_EQ(kvm->Verdict(), "the seed does not say");
  }
  EXPECT_EQ(Find(r, "kvm_exits_per_op", "divzero", TrapMechanism::kOff)->old_value, 4.4);
  const Comparison* patched = Find(r, "kvm_exits_per_op", "divzero", TrapMechanism::kPatch);
  EXPECT_EQ(patched->old_value, 9.4);  // 5 of the VMM's (a DR7 write, 4 segment loads)
  EXPECT_EQ(patched->new_value, 8.4);
  // Right after the VMM's exits.
  for (size_t i = 0; i + 1 < r.comparisons.size(); ++i) {
    if (r.comparisons[i].metric == "exits_per_op") {
      EXPECT_EQ(r.comparisons[i + 1].metric, "kvm_exits_per_op") << i;
    }
  }
  EXPECT_NE(r.text.find("    KVM's own exits (median)                     9.40         8.40        "
                        " -1  (-10.6%)  "
                        "the seed does not say\n"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(r.text.find("FINDING: KVM"), std::string::npos) << r.text;
  // The JSON (its comparisons, and the breakdown in the bench's cells) and the CSV.
  std::ifstream file("docs/schema/sigvisor.study-1.schema.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json doc = nlohmann::json::parse(StudiesToJson({r}).dump());
  const std::vector<std::string> errors = testing::ValidateJson(doc, nlohmann::json::parse(file));
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(doc["studies"][0]["bench"]["cells"][0]["kvm_exits_by_reason_per_op"],
            nlohmann::json({{"insn_emulation_fail", 7.0}}));
  EXPECT_NE(
      StudiesToCsv({r}).find(",kvm_exits_per_op,KVM's own exits (median),divzero,patch,exits,"),
      std::string::npos);
  // Without KVM's exits (no statistics on the host): no figure.
  EXPECT_EQ(Find(FakeStudy(def, 3), "kvm_exits_per_op", "divzero", TrapMechanism::kOff), nullptr);
}

TEST(ComparisonTest, Verdicts) {
  Comparison c;
  c.old_value = 10;
  c.new_value = 8;
  c.p_value = 0.01;
  c.seed.direction = Direction::kLower;
  EXPECT_EQ(c.agrees(), true);
  c.p_value = 0.2;
  EXPECT_EQ(c.agrees(), std::nullopt);  // within the noise
  EXPECT_EQ(c.Verdict(), "no evidence either way (p=0.2); the seed: lower");
  c.seed.direction = Direction::kHigher;
  c.p_value = 0.001;
  EXPECT_EQ(c.agrees(), false);
  EXPECT_NE(c.Verdict().find("GOES AGAINST THE SEED"), std::string::npos);
  c.seed.direction = Direction::kSame;
  EXPECT_EQ(c.agrees(), false);
  // No difference found is no evidence of none: not agreement with "no change".
  c.p_value = 0.5;
  EXPECT_EQ(c.significant(), false);
  EXPECT_EQ(c.agrees(), std::nullopt);
  EXPECT_EQ(c.Verdict(), "no evidence either way (p=0.5); the seed: no change");
  c.seed.direction = Direction::kNone;
  EXPECT_EQ(c.agrees(), std::nullopt);
  Comparison exact;
  exact.exact = true;
  exact.old_value = exact.new_value = 4;
  exact.seed.direction = Direction::kSame;
  EXPECT_EQ(exact.agrees(), true);
  EXPECT_EQ(exact.change_percent(), 0);
  EXPECT_EQ(exact.significant(), std::nullopt);  // a count has no p to be significant by
  exact.new_value = 5;
  EXPECT_EQ(exact.agrees(), false);
  EXPECT_EQ(exact.significant(), std::nullopt);
}

// Runs too few for any p below 0.05 (two and two: 0.33 at best) make no time
// significant, whatever it did, and the verdict says so.
TEST(ComparisonTest, TooFewRunsForSignificance) {
  Comparison c;
  c.old_value = 100;
  c.new_value = 145.6;
  c.p_value = 0.67;
  c.p_floor = bench::MannWhitneyMinP(2, 2);
  EXPECT_NEAR(*c.p_floor, 1.0 / 3, 1e-9);
  c.seed.direction = Direction::kSame;
  EXPECT_TRUE(c.too_few_runs());
  EXPECT_EQ(c.significant(), false);
  EXPECT_EQ(c.agrees(), std::nullopt);
  EXPECT_EQ(c.Verdict(),
            "too few runs for significance (p cannot go below 0.33); the seed: no change");
  c.p_value = *c.p_floor;  // the best two runs can do is still not enough
  c.seed.direction = Direction::kHigher;
  EXPECT_EQ(c.agrees(), std::nullopt);
  c.p_floor = bench::MannWhitneyMinP(5, 5);  // 2/252: enough
  EXPECT_FALSE(c.too_few_runs());
  c.p_value = 0.008;
  EXPECT_EQ(c.agrees(), true);
  EXPECT_EQ(bench::MannWhitneyMinP(0, 5), 1.0);
}

TEST(ObjectStatsTest, EveryVariantHasItsSignalObject) {
  for (const KernelVariant& v : KernelVariants()) {
    const ObjectStats* s = SignalObjectStats(v.name);
    ASSERT_NE(s, nullptr) << v.name;
    EXPECT_EQ(s->file, "signal.o");
    EXPECT_GT(s->text, 0u);
    EXPECT_NE(s->FindStack("exit_to_user_mode"), nullptr) << v.name;
  }
  EXPECT_EQ(SignalObjectStats("no such build"), nullptr);
}

// The object measured is the one the kernel links: every function it defines has the
// same size in the kernel image's symbol table.
TEST(ObjectStatsTest, TheObjectIsTheOneTheKernelLinks) {
  for (const KernelVariant& v : KernelVariants()) {
    absl::StatusOr<ElfImage> elf = ParseKernel(v);
    ASSERT_TRUE(elf.ok());
    const ObjectStats* s = SignalObjectStats(v.name);
    ASSERT_NE(s, nullptr);
    ASSERT_FALSE(s->functions.empty());
    for (const ObjectFunction& f : s->functions) {
      std::optional<Symbol> symbol = elf->symbols().Find(f.name);
      ASSERT_TRUE(symbol.has_value()) << v.name << " " << f.name;
      EXPECT_EQ(symbol->size, f.bytes) << v.name << " " << f.name;
    }
  }
}

TEST(BloatTest, LikeBloatOMeter) {
  auto table = [](std::vector<Symbol> symbols) {
    return SymbolTable::FromSymbols(std::move(symbols));
  };
  SymbolTable before = table({{"kept", 0x1000, 100, STT_FUNC, STB_GLOBAL},
                              {"grows", 0x2000, 50, STT_FUNC, STB_GLOBAL},
                              {"shrinks", 0x3000, 80, STT_FUNC, STB_LOCAL},
                              {"gone", 0x4000, 10, STT_OBJECT, STB_LOCAL},
                              {"label", 0x5000, 0, STT_NOTYPE, STB_GLOBAL}});
  SymbolTable after = table({{"kept", 0x1000, 100, STT_FUNC, STB_GLOBAL},
                             {"grows", 0x2000, 70, STT_FUNC, STB_GLOBAL},
                             {"shrinks", 0x3000, 40, STT_FUNC, STB_LOCAL},
                             {"new", 0x4000, 16, STT_OBJECT, STB_LOCAL}});
  BloatReport r = CompareSymbols(before, after);
  EXPECT_EQ(r.added, 1);
  EXPECT_EQ(r.removed, 1);
  EXPECT_EQ(r.grown, 1);
  EXPECT_EQ(r.shrunk, 1);
  EXPECT_EQ(r.up, 36);
  EXPECT_EQ(r.down, -50);
  EXPECT_EQ(r.total(), -14);
  EXPECT_EQ(r.old_total, 240);
  EXPECT_EQ(r.new_total, 226);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows.front().name, "grows");
  EXPECT_EQ(r.rows.back().name, "shrinks");
  EXPECT_EQ(FormatBloat(r).substr(0, 58),
            "add/remove: 1/1 grow/shrink: 1/1 up/down: 36/-50 (-14)\nfun");
}

}  // namespace
}  // namespace sigvisor::study
