#include "vmm/app/study/study.h"

#include <gtest/gtest.h>

#include <fstream>

#include "absl/strings/str_format.h"
#include "vmm/app/bench/runner.h"
#include "vmm/app/bench/stats.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/app/study/bloat.h"
#include "vmm/app/study/linux_column.h"
#include "vmm/app/study/object_stats.h"
#include "vmm/report/testing/json_schema.h"
#include "vmm/report/testing/xml_check.h"

namespace sigvisor::study {
namespace {

// What the study schema (docs/schema/sigvisor.study-1.schema.json) finds wrong with
// `doc`: nothing for a valid document; one complaint if the schema cannot be read.
std::vector<std::string> StudySchemaErrors(const nlohmann::json& doc) {
  std::ifstream file("docs/schema/sigvisor.study-1.schema.json");
  if (!file.good()) return {"cannot read docs/schema/sigvisor.study-1.schema.json"};
  return testing::ValidateJson(doc, nlohmann::json::parse(file));
}

// A study report's JSON against the schema.
void ExpectValidStudyJson(const StudyReport& r) {
  const std::vector<std::string> errors =
      StudySchemaErrors(nlohmann::json::parse(StudiesToJson({r}).dump()));
  EXPECT_TRUE(errors.empty()) << errors.front();
}

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

// pvsig is named on its own (or beside a seed's study), never by `all`: the seeds' four.
TEST(StudyTest, PvsigIsNamedButNotInAll) {
  absl::StatusOr<std::vector<const StudyDef*>> pvsig =
      ParseStudyNames(std::vector<std::string>{"pvsig"});
  ASSERT_TRUE(pvsig.ok()) << pvsig.status();
  ASSERT_EQ(pvsig->size(), 1u);
  EXPECT_EQ((*pvsig)[0]->name, "pvsig");
  EXPECT_EQ((*pvsig)[0]->seed, "");
  EXPECT_EQ((*ParseStudyNames(std::vector<std::string>{"dr7", "pvsig"}))[1]->name, "pvsig");
  absl::StatusOr<std::vector<const StudyDef*>> all =
      ParseStudyNames(std::vector<std::string>{"all"});
  ASSERT_TRUE(all.ok());
  for (const StudyDef* s : *all) {
    EXPECT_NE(s->name, "pvsig");
    EXPECT_FALSE(s->seed.empty()) << s->name;
  }
  absl::StatusOr<std::vector<const StudyDef*>> bad =
      ParseStudyNames(std::vector<std::string>{"pvsigs"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "no study 'pvsigs' (give dr7, pda, cerr, dequeue, pvsig, ipi or all)");
  EXPECT_FALSE(ParseStudyNames(std::vector<std::string>{"pvsig", "pvsig"}).ok());
  EXPECT_FALSE(ParseStudyNames(std::vector<std::string>{"all", "pvsig"}).ok());
}

TEST(StudyTest, EveryStudyComparesTheBaselineWithItsSeedsVariant) {
  for (const StudyDef& def : Studies()) {
    if (!def.variants.empty()) continue;  // ipi: several builds side by side (below)
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
  const nlohmann::json doc = nlohmann::json::parse(StudiesToJson(reports).dump());
  const std::vector<std::string> errors = StudySchemaErrors(doc);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(doc["complete"].get<bool>());
  EXPECT_EQ(doc["studies"].size(), 6u);  // the four seeds', pvsig and ipi

  const std::string csv = StudiesToCsv(reports);
  size_t lines = 0, rows = 0;
  for (char c : csv) lines += c == '\n';
  for (const StudyReport& r : reports) rows += r.comparisons.size();
  EXPECT_EQ(lines, rows + 1);

  testing::XmlCheck svg = testing::CheckXml(StudiesToSvg(reports));
  ASSERT_TRUE(svg.ok) << svg.error;
  for (const char* name :
       {"baseline", "dr7=lazy", "pda=direct", "uaccess=cerr", "dequeue=pointer", "signal=pv"}) {
    EXPECT_NE(svg.text.find(name), std::string::npos) << name;
  }
}

// The Linux column: the seed's figures counted in traced ops of Linux and of the study's
// two builds; the study's own tables are left as they were.
TEST(StudyTest, LinuxColumnSitsBesideTheModelsColumns) {
  StudyReport r = FakeStudy(*FindStudy("dr7"));
  const std::string model_text = r.text;
  const nlohmann::ordered_json model_comparisons = StudyToJson(r)["comparisons"];
  auto kernel = [](uint64_t insns, uint64_t dr7) {
    trace::OpCounts c;
    c.kernel_insns = insns;
    c.dr7_writes = c.dr_writes = dr7;
    c.stage_insns["DR7 write"] = dr7 == 1 ? 2 : 0;
    return TracedKernel{.ops = {{"divzero", c}}};
  };
  const TracedKernel linux_kernel = kernel(3108, 0), old_build = kernel(828, 1),
                     new_build = kernel(829, 0);
  const LinuxColumn column =
      MakeLinuxColumn("dr7", "vmlinuz", linux_kernel, &old_build, &new_build);
  ASSERT_TRUE(column.absent_why.empty()) << column.absent_why;
  AddLinuxColumn(r, column);
  ASSERT_TRUE(r.text.starts_with(model_text));  // the study's tables unchanged
  EXPECT_EQ(StudyToJson(r)["comparisons"], model_comparisons);
  const std::string linux_part = r.text.substr(model_text.size());
  EXPECT_NE(linux_part.find("Linux beside the model (vmlinuz)"), std::string::npos) << linux_part;
  EXPECT_NE(linux_part.find("828          829         3108"), std::string::npos) << linux_part;
  const nlohmann::ordered_json json = StudyToJson(r)["linux"];
  EXPECT_EQ(json["kernel"], "vmlinuz");
  ASSERT_EQ(json["figures"].size(), 4u);
  EXPECT_EQ(json["figures"][1]["metric"], "dr7_writes_per_op");
  EXPECT_EQ(json["figures"][1]["old"], 1);
  EXPECT_EQ(json["figures"][1]["new"], 0);
  EXPECT_EQ(json["figures"][1]["linux"], 0);

  // Without the builds' traces their cells are "-", and the text says why.
  StudyReport alone = FakeStudy(*FindStudy("dr7"));
  AddLinuxColumn(alone, MakeLinuxColumn("dr7", "vmlinuz", linux_kernel, nullptr, nullptr,
                                        "the trace of divzero in baseline failed: x"));
  EXPECT_NE(alone.text.find("(the builds' columns: the trace of divzero in baseline failed: x)"),
            std::string::npos)
      << alone.text;
  EXPECT_TRUE(StudyToJson(alone)["linux"]["figures"][0]["old"].is_null());

  // Every seed study has phases to trace; pvsig has none. A missing phase is said.
  for (std::string_view name : {"dr7", "pda", "cerr", "dequeue"}) {
    EXPECT_FALSE(LinuxPhasesFor(name).empty()) << name;
    EXPECT_FALSE(MakeLinuxColumn(name, "vmlinuz", {}, nullptr, nullptr).absent_why.empty()) << name;
  }
  EXPECT_TRUE(LinuxPhasesFor("pvsig").empty());
  StudyReport dequeue = FakeStudy(*FindStudy("dequeue"));
  AddLinuxColumn(dequeue, AbsentLinuxColumn("vmlinuz", "the trace failed: x"));
  EXPECT_NE(dequeue.text.find("Linux: not measured: the trace failed: x."), std::string::npos);
  std::vector<StudyReport> all;
  all.push_back(std::move(r));
  all.push_back(std::move(alone));
  all.push_back(std::move(dequeue));
  const std::vector<std::string> errors =
      StudySchemaErrors(nlohmann::json::parse(StudiesToJson(all).dump()));
  EXPECT_TRUE(errors.empty()) << errors.front();
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
  ExpectValidStudyJson(r);
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
  const nlohmann::json doc = nlohmann::json::parse(StudiesToJson({r}).dump());
  const std::vector<std::string> errors = StudySchemaErrors(doc);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(doc["studies"][0]["bench"]["cells"][0]["kvm_exits_by_reason_per_op"],
            nlohmann::json({{"insn_emulation_fail", 7.0}}));
  EXPECT_NE(
      StudiesToCsv({r}).find(",kvm_exits_per_op,KVM's own exits (median),divzero,patch,exits,"),
      std::string::npos);
  // Without KVM's exits (no statistics on the host): no figure.
  EXPECT_EQ(Find(FakeStudy(def, 3), "kvm_exits_per_op", "divzero", TrapMechanism::kOff), nullptr);
}

// A fake host for pvsig's divzero: per signal, the build's kernel instructions (827;
// signal=pv 556) at `ns_per_insn` each, its VMM exits (0; signal=pv's two hypercalls)
// at `ns_per_exit` each, `rest_ns` of the rest, and 10 ns of spread across the runs.
// Kernel instructions are counted only where `cpl0_emulated`, as insn_emulation is.
struct PvsigHost {
  bench::HostInfoSummary host;
  double ns_per_insn = 0, ns_per_exit = 0, rest_ns = 0;
  bool kvm_exits = false;  // KVM's own statistics: one exit a signal, and each hypercall's
};

StudyReport FakePvsig(const PvsigHost& h, const StudyHostCosts& costs = {}) {
  const StudyDef& def = *FindStudy("pvsig");
  absl::StatusOr<bench::Matrix> matrix = StudyMatrix(def, 10, 5, {}, 32);
  EXPECT_TRUE(matrix.ok()) << matrix.status();
  const bench::Matrix m = *matrix;
  bench::RunnerOptions options;
  options.host = h.host;
  auto run = [&](const bench::RunSpec& spec) -> absl::StatusOr<bench::RunSample> {
    bench::RunSample sample;
    sample.spec = spec;
    sample.outcome = "exited";
    const bool pv = spec.variant == 1;
    const uint64_t insns = pv ? 556 : 827, exits = pv ? 2 : 0;
    bench::PhaseSample p;
    p.name = "divzero";
    p.ops = m.ops;
    if (h.host.cpl0_emulated) p.kernel_insns = insns * m.ops;
    p.exits = exits * m.ops;
    if (h.kvm_exits) p.kvm_exits = (1 + exits) * m.ops;
    p.wall_ns = static_cast<uint64_t>(double(m.ops) * (double(insns) * h.ns_per_insn +
                                                       double(exits) * h.ns_per_exit + h.rest_ns +
                                                       10.0 * (spec.repetition % 3)));
    p.tsc_cycles = 2 * *p.wall_ns;
    sample.phases.push_back(p);
    return sample;
  };
  return AnalyzeStudy(def, bench::RunMatrix(m, run, options), {}, costs);
}

// A PVM-like host: kernel instructions counted at ~1 us each, an exit at 14 us. The
// break-even (271 instructions saved for 2 exits: 135.5 an exit) is far above what an
// exit costs, and signal=pv wins.
TEST(StudyTest, PvsigCrossoverWhereKernelInstructionsAreDear) {
  StudyReport r = FakePvsig({{"pvm", true}, 1000, 14000, 5000});
  ASSERT_TRUE(r.complete());
  EXPECT_NE(r.text.find("== study pvsig (no seed): "), std::string::npos) << r.text;
  // Each build per signal: time, kernel instructions, exits.
  auto row = [](const char* build, const char* ns, const char* insns, const char* exits,
                const char* kvm) {
    return absl::StrFormat("  %-14s %14s %26s %9s %12s\n", build, ns, insns, exits, kvm);
  };
  EXPECT_NE(r.text.find(row("baseline", "832.0 us", "827", "0", "-")), std::string::npos) << r.text;
  EXPECT_NE(r.text.find(row("signal=pv", "589.0 us", "556", "2", "-")), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("Crossover: signal=pv replaces 271 kernel instructions per signal with 2 "
                        "exits:\n  it wins where one exit costs less than 135.50 kernel "
                        "instructions (the break-even).\n"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("  A kernel instruction costs at most 1006 ns here (baseline's time per "
                        "signal / its\n  kernel instructions): the break-even is an exit round "
                        "trip of at most 136.3 us.\n"),
            std::string::npos)
      << r.text;
  // Not probed: the prediction is a threshold on the exit's cost.
  EXPECT_NE(r.text.find("  Predicted: offloading loses where one exit costs more than that, and "
                        "should\n  win below it"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("Measured: signal=pv takes 0.71x baseline's time per signal (p=0.011): "
                        "offloading wins here.\n"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("  The medians put one exit round trip at no more than 14.8 us here, at "
                        "most 14.73\n  kernel instructions' worth (the break-even: 135.50).\n"),
            std::string::npos)
      << r.text;
  // No seed: no verdict column, no finding.
  EXPECT_EQ(r.text.find("against the seed"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("the seed does not say"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("    VM exits                                        0            2"
                        "         +2\n"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(r.text.find("FINDING"), std::string::npos) << r.text;
  const Comparison* exits = Find(r, "exits_per_op", "divzero", TrapMechanism::kOff);
  ASSERT_NE(exits, nullptr);
  EXPECT_EQ(exits->old_value, 0);
  EXPECT_EQ(exits->new_value, 2);
  EXPECT_EQ(exits->agrees(), std::nullopt);
  const Comparison* insns = Find(r, "kernel_insns_per_op", "divzero", TrapMechanism::kOff);
  ASSERT_NE(insns, nullptr);
  EXPECT_EQ(insns->change(), -271);
  ASSERT_NE(Find(r, "ns_per_op_median", "divzero", TrapMechanism::kOff), nullptr);
  // The crossover in the JSON's static data, one per trap mechanism.
  ASSERT_TRUE(r.extra.contains("crossover"));
  ASSERT_EQ(r.extra["crossover"].size(), 1u);
  const nlohmann::ordered_json& x = r.extra["crossover"][0];
  EXPECT_EQ(x["trap"], "off");
  EXPECT_EQ(x["old"]["variant"], "baseline");
  EXPECT_EQ(x["new"]["kernel_insns_per_op"], 556.0);
  EXPECT_EQ(x["new"]["exits_per_op"], 2.0);
  EXPECT_EQ(x["kernel_insns_saved"], 271.0);
  EXPECT_EQ(x["exits_added"], 2.0);
  EXPECT_EQ(x["break_even_insns_per_exit"], 135.5);
  EXPECT_NEAR(x["ns_per_kernel_insn_max"].get<double>(), 832010.0 / 827, 1e-6);
  EXPECT_NEAR(x["time_ratio"].get<double>(), 589010.0 / 832010, 1e-9);
  EXPECT_EQ(x["measured_winner"], "signal=pv");
  EXPECT_TRUE(x["exit_ns_min"].is_null());
  // (dT + dI * the bound on a kernel instruction's cost) / dE.
  EXPECT_NEAR(x["exit_ns_max"].get<double>(), (589010.0 - 832010 + 271 * (832010.0 / 827)) / 2,
              1e-6);
  ExpectValidStudyJson(r);
  const std::string csv = StudiesToCsv({r});
  EXPECT_NE(csv.find("pvsig,,exits_per_op,VM exits,divzero,off,exits,baseline,signal=pv,0,2,2,"),
            std::string::npos)
      << csv;
}

// With `sigvisor probe`'s exit round trip (as the study command measures it first), the
// prediction is a number: 14 us an exit is at least 13.9 kernel instructions' worth at
// 1006 ns an instruction, under the break-even of 135.5: signal=pv should win. And an
// exit dearer than the break-even predicts a loss.
TEST(StudyTest, PvsigPredictsFromTheProbesExitCost) {
  StudyReport wins = FakePvsig({{"pvm", true}, 1000, 14000, 5000}, {.exit_round_trip_ns = 14000});
  EXPECT_NE(wins.text.find("  Predicted from `sigvisor probe`: an exit round trip costs 14.0 us "
                           "here, 13.92 kernel\n  instructions' worth at least: offloading "
                           "should win, if kernel instructions are most of the baseline's time "
                           "(break-even 135.50).\n"),
            std::string::npos)
      << wins.text;
  const nlohmann::ordered_json& x = wins.extra["crossover"][0];
  EXPECT_EQ(x["probe_exit_round_trip_ns"], 14000.0);
  EXPECT_NEAR(x["probe_exit_insns_min"].get<double>(), 14000 / (832010.0 / 827), 1e-9);
  EXPECT_EQ(x["predicted_winner"], "signal=pv");
  ExpectValidStudyJson(wins);
  StudyReport loses = FakePvsig({{"pvm", true}, 1000, 14000, 5000}, {.exit_round_trip_ns = 200000});
  EXPECT_NE(loses.text.find("offloading should lose (break-even 135.50)"), std::string::npos)
      << loses.text;
  EXPECT_EQ(loses.extra["crossover"][0]["predicted_winner"], "baseline");
  // Where no kernel instruction is counted the probe's figure prices the exits only.
  StudyReport hw =
      FakePvsig({{"hardware", false}, 0.3, 1500, 1700, true}, {.exit_round_trip_ns = 1500});
  EXPECT_NE(
      hw.text.find("  Predicted from `sigvisor probe`: an exit round trip costs 1500 ns here, "
                   "so\n  signal=pv adds 3000 ns per signal"),
      std::string::npos)
      << hw.text;
  EXPECT_TRUE(hw.extra["crossover"][0]["predicted_winner"].is_null());
}

// A hardware-like host: no kernel instruction counted, an exit at 1.5 us against 0.3 ns
// an instruction. No break-even and no prediction; the times show signal=pv loses, and
// bound an exit's cost from below.
TEST(StudyTest, PvsigCrossoverWhereNoKernelInstructionIsCounted) {
  StudyReport r = FakePvsig({{"hardware", false}, 0.3, 1500, 1700, true});
  ASSERT_TRUE(r.complete());
  auto row = [](const char* build, const char* ns, const char* insns, const char* exits,
                const char* kvm) {
    return absl::StrFormat("  %-14s %14s %26s %9s %12s\n", build, ns, insns, exits, kvm);
  };
  EXPECT_NE(r.text.find(row("baseline", "2.0 us", "not counted on this host", "0", "1")),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find(row("signal=pv", "4.9 us", "not counted on this host", "2", "3")),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("Crossover: signal=pv takes 2 exits more per signal for the kernel "
                        "instructions it\n  saves, which this host does not count"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("no\n  break-even here, only what the times show"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("Measured: signal=pv takes 2.49x baseline's time per signal (p=0.011): "
                        "offloading loses here.\n"),
            std::string::npos)
      << r.text;
  // The medians, 4876.8 and 1958.1 ns: 2918.7 ns for 2 exits.
  EXPECT_NE(r.text.find("  Its 2 exits cost 2919 ns more per signal than the kernel work they "
                        "replace: one\n  exit round trip costs at least 1459 ns here"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(r.text.find("Predicted"), std::string::npos) << r.text;
  EXPECT_EQ(Find(r, "kernel_insns_per_op", "divzero", TrapMechanism::kOff), nullptr);
  const Comparison* kvm = Find(r, "kvm_exits_per_op", "divzero", TrapMechanism::kOff);
  ASSERT_NE(kvm, nullptr);
  EXPECT_EQ(kvm->new_value, 3);
  const nlohmann::ordered_json& x = r.extra["crossover"][0];
  EXPECT_TRUE(x["old"]["kernel_insns_per_op"].is_null());
  EXPECT_TRUE(x["kernel_insns_saved"].is_null());
  EXPECT_TRUE(x["break_even_insns_per_exit"].is_null());
  EXPECT_TRUE(x["break_even_exit_ns_max"].is_null());
  EXPECT_EQ(x["measured_winner"], "baseline");
  EXPECT_GT(x["exit_ns_min"].get<double>(), 1400);
  EXPECT_TRUE(x["exit_ns_max"].is_null());
  ExpectValidStudyJson(r);
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

// study ipi: xcpu_pingpong on the three IPI ways of two vCPUs, on KVM's local APICs and
// on the VMM's, and sigpingpong on the baseline as a second bench (the one-vCPU signal).
// Per op (two signals): on KVM's APICs pv makes one exit per vCPU (its send_ipi); on the
// VMM's each vCPU makes its APIC's exits (2 x2apic, 3 xapic, 2 pv) and one hlt; each
// vCPU takes one IPI by the guest's count (unless guest_ipis is false: a kernel that does
// not count them), while KVM injects one more into vCPU 1 every other op (re-injections);
// a cross-CPU round trip takes 3x (x2apic), 4x (xapic), 5x (pv) the one-vCPU one's 1 us
// on KVM's APICs, and 2 us more per op on the VMM's.
absl::StatusOr<bench::RunSample> FakeIpiRun(const bench::Matrix& m, const bench::RunSpec& spec,
                                            bool guest_ipis = true) {
  bench::RunSample sample;
  sample.spec = spec;
  sample.outcome = "exited";
  const bench::VariantInfo& v = m.variants[spec.variant];
  bench::PhaseSample p;
  p.name = m.workloads[spec.workload];
  p.ops = m.ops;
  const bool vmm_lapic = v.lapic == "vmm";
  const uint64_t way = v.ipi == "x2apic" ? 3 : v.ipi == "xapic" ? 4 : v.ipi == "pv" ? 5 : 1;
  const uint64_t factor = way + (vmm_lapic ? 2 : 0);
  p.wall_ns = m.ops * 1000 * factor;
  p.tsc_cycles = 2 * *p.wall_ns;
  if (v.vcpus > 1) {
    const uint64_t apic_exits = v.ipi == "xapic" ? 3 : 2;
    p.exits = vmm_lapic ? (apic_exits + 1) * m.ops : v.ipi == "pv" ? m.ops : 0;
    const std::optional<uint64_t> ipis = guest_ipis ? std::optional<uint64_t>(m.ops) : std::nullopt;
    p.vcpus = {{.vcpu = 0, .exits = p.exits, .ipis = ipis, .interrupts = m.ops},
               {.vcpu = 1, .exits = p.exits, .ipis = ipis, .interrupts = m.ops + m.ops / 2}};
  }
  sample.phases.push_back(p);
  return sample;
}

StudyReport FakeIpi(uint32_t repetitions = 3, bool guest_ipis = true) {
  const StudyDef& def = *FindStudy("ipi");
  absl::StatusOr<bench::Matrix> m = StudyMatrix(def, 10, repetitions, {}, 32);
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<std::optional<bench::Matrix>> ref = ReferenceMatrix(def, *m);
  EXPECT_TRUE(ref.ok() && ref->has_value()) << ref.status();
  bench::RunnerOptions options;
  options.host = {"hardware", false};
  const bench::Matrix main = *m, reference = **ref;
  return AnalyzeStudy(
      def,
      bench::RunMatrix(
          main, [&](const bench::RunSpec& s) { return FakeIpiRun(main, s, guest_ipis); }, options),
      {}, {},
      bench::RunMatrix(
          reference, [&](const bench::RunSpec& s) { return FakeIpiRun(reference, s); }, options));
}

TEST(IpiStudyTest, BenchesTheThreeWaysOnBothApicsAndTheOneVcpuSignal) {
  const StudyDef& def = *FindStudy("ipi");
  EXPECT_EQ(def.seed, "");
  absl::StatusOr<bench::Matrix> m = StudyMatrix(def, std::nullopt, std::nullopt, {}, 32);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->workloads, std::vector<std::string>{"xcpu_pingpong"});
  ASSERT_EQ(m->variants.size(), 6u);
  EXPECT_EQ(m->variants[0].name, "smp=on@vcpus=2@ipi=x2apic");
  EXPECT_EQ(m->variants[1].ipi, "xapic");
  EXPECT_EQ(m->variants[2].ipi, "pv");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(m->variants[i].lapic, "");  // KVM's
    EXPECT_EQ(m->variants[i + 3].ipi, m->variants[i].ipi);
    EXPECT_EQ(m->variants[i + 3].lapic, "vmm");
    EXPECT_EQ(m->variants[i + 3].name, m->variants[i].name + "@lapic=vmm");
  }
  for (const bench::VariantInfo& v : m->variants) EXPECT_EQ(v.vcpus, 2);
  EXPECT_EQ(m->traps, std::vector<TrapMechanism>{TrapMechanism::kOff});
  absl::StatusOr<std::optional<bench::Matrix>> ref = ReferenceMatrix(def, *m);
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_TRUE(ref->has_value());
  EXPECT_EQ((*ref)->workloads, std::vector<std::string>{"sigpingpong"});
  ASSERT_EQ((*ref)->variants.size(), 1u);
  EXPECT_EQ((*ref)->variants[0].name, "smp=on");  // the same kernel, on one vCPU
  EXPECT_EQ((*ref)->variants[0].vcpus, 1);
  EXPECT_EQ((*ref)->ops, m->ops);
  EXPECT_EQ((*ref)->repetitions, m->repetitions);
  // The seeds' studies have no reference.
  EXPECT_FALSE(ReferenceMatrix(*FindStudy("dr7"), *m)->has_value());
  // Not in all.
  const absl::StatusOr<std::vector<const StudyDef*>> all =
      ParseStudyNames(std::vector<std::string>{"all"});
  ASSERT_TRUE(all.ok());
  for (const StudyDef* s : *all) EXPECT_NE(s->name, "ipi");
}

TEST(IpiStudyTest, TheTablePerCrossCpuSignal) {
  const StudyReport r = FakeIpi();
  EXPECT_TRUE(r.complete());
  EXPECT_TRUE(r.comparisons.empty());  // no seed, no verdict
  const std::string& t = r.text;
  EXPECT_NE(t.find("== study ipi (no seed): a signal to another CPU"), std::string::npos) << t;
  EXPECT_NE(t.find("reference: sigpingpong on smp=on, 3 runs"), std::string::npos) << t;
  EXPECT_NE(t.find("  build                                 exits 0  exits 1  IPIs 0  IPIs 1  time "
                   "(median) [min - max]        x one-vCPU signal\n"),
            std::string::npos)
      << t;
  // Per signal: half an op. x2apic: no exit, half an IPI each (one per round trip) by
  // the guest's count, though KVM injected 0.75 into vCPU 1; 3x the one-vCPU signal's
  // 500 ns.
  EXPECT_NE(
      t.find("  smp=on@vcpus=2@ipi=x2apic                   0        0    0.50    0.50  1.5 us "
             "[1.5 us - 1.5 us]"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find(" 3.000\n"), std::string::npos) << t;
  EXPECT_NE(
      t.find("  smp=on@vcpus=2@ipi=pv                    0.50     0.50    0.50    0.50  2.5 us"),
      std::string::npos)
      << t;
  EXPECT_NE(
      t.find("  smp=on@vcpus=2@ipi=x2apic@lapic=vmm      1.50     1.50    0.50    0.50  2.5 us"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find(" 5.000\n"), std::string::npos) << t;
  EXPECT_NE(
      t.find("  one-vCPU signal (sigpingpong on smp=on): 500 ns [500 ns - 500 ns] per signal"),
      std::string::npos)
      << t;

  const nlohmann::json& ipi = r.extra["ipi"];
  ASSERT_EQ(ipi.size(), 1u);
  EXPECT_EQ(ipi[0]["trap"], "off");
  ASSERT_EQ(ipi[0]["ways"].size(), 6u);
  EXPECT_EQ(ipi[0]["ways"][2]["ipi"], "pv");
  EXPECT_EQ(ipi[0]["ways"][2]["lapic"], "kvm");
  // On the VMM's APICs: xapic's 3 APIC exits and a hlt per op on each vCPU, 6x the
  // one-vCPU signal.
  EXPECT_EQ(ipi[0]["ways"][4]["ipi"], "xapic");
  EXPECT_EQ(ipi[0]["ways"][4]["lapic"], "vmm");
  EXPECT_EQ(ipi[0]["ways"][4]["vcpus"][0]["exits"], 2.0);
  EXPECT_EQ(ipi[0]["ways"][4]["vcpus"][1]["ipis"], 0.5);
  EXPECT_DOUBLE_EQ(ipi[0]["ways"][4]["ratio_to_one_vcpu"].get<double>(), 6.0);
  EXPECT_EQ(ipi[0]["ways"][2]["vcpus"][1]["exits"], 0.5);
  EXPECT_EQ(ipi[0]["ways"][2]["vcpus"][1]["ipis"], 0.5);  // the guest's count
  EXPECT_EQ(ipi[0]["ways"][2]["vcpus"][1]["interrupts"], 0.75);
  EXPECT_EQ(ipi[0]["ways"][2]["vcpus"][0]["interrupts"], 0.5);
  EXPECT_DOUBLE_EQ(ipi[0]["ways"][1]["ratio_to_one_vcpu"].get<double>(), 4.0);
  EXPECT_EQ(ipi[0]["one_vcpu"]["variant"], "smp=on");
  EXPECT_NE(t.find("@lapic=vmm: also its APIC accesses, exact, and its halts and kicks"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("IPIs N: the IPIs sent to vCPU N by the kernel's own count (KVM's "
                   "irq_injections where the kernel does not count), each per signal\n"),
            std::string::npos)
      << t;
}

TEST(IpiStudyTest, WithoutTheGuestsCountTheIpisAreKvmsInjections) {
  const StudyReport r = FakeIpi(3, /*guest_ipis=*/false);
  EXPECT_NE(r.text.find(
                "  smp=on@vcpus=2@ipi=x2apic                   0        0    0.50    0.75  1.5 us"),
            std::string::npos)
      << r.text;
  const nlohmann::json& vcpu1 = r.extra["ipi"][0]["ways"][0]["vcpus"][1];
  EXPECT_EQ(vcpu1["ipis"], 0.75);
  EXPECT_EQ(vcpu1["interrupts"], 0.75);
}

TEST(IpiStudyTest, JsonValidatesWithItsReferenceBench) {
  std::vector<StudyReport> reports;
  reports.push_back(FakeIpi());
  reports.push_back(FakeStudy(*FindStudy("dr7"), 3));
  const nlohmann::json doc = nlohmann::json::parse(StudiesToJson(reports).dump());
  const std::vector<std::string> errors = StudySchemaErrors(doc);
  EXPECT_TRUE(errors.empty()) << errors.front();
  const nlohmann::json& s = doc["studies"][0];
  EXPECT_EQ(s["variants"].size(), 6u);
  EXPECT_EQ(s["reference_bench"]["matrix"]["workloads"][0], "sigpingpong");
  EXPECT_EQ(s["bench"]["cells"][0]["vcpus_per_op"].size(), 2u);
  EXPECT_FALSE(doc["studies"][1].contains("variants"));
  EXPECT_FALSE(doc["studies"][1].contains("reference_bench"));
  // The CSV has the comparisons: ipi has none. The chart has every way.
  EXPECT_EQ(StudiesToCsv({reports[0]}).find('\n') + 1, StudiesToCsv({reports[0]}).size());
  testing::XmlCheck svg = testing::CheckXml(StudiesToSvg(reports));
  ASSERT_TRUE(svg.ok) << svg.error;
  EXPECT_NE(svg.text.find("ipi=pv"), std::string::npos);
}

TEST(IpiStudyTest, AnIncompleteReferenceMakesAnIncompleteStudy) {
  const StudyDef& def = *FindStudy("ipi");
  const bench::Matrix m = *StudyMatrix(def, 10, 2, {}, 32);
  const bench::Matrix ref = **ReferenceMatrix(def, m);
  bench::RunnerOptions options;
  options.host = {"hardware", false};
  StudyReport r =
      AnalyzeStudy(def,
                   bench::RunMatrix(
                       m, [&](const bench::RunSpec& s) { return FakeIpiRun(m, s); }, options),
                   {}, {},
                   bench::RunMatrix(
                       ref,
                       [&](const bench::RunSpec&) -> absl::StatusOr<bench::RunSample> {
                         return absl::InternalError("no VM");
                       },
                       options));
  EXPECT_FALSE(r.complete());
  EXPECT_NE(r.text.find("one-vCPU signal (sigpingpong on smp=on): no completed run"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("reference: INCOMPLETE"), std::string::npos) << r.text;
}

}  // namespace
}  // namespace sigvisor::study
