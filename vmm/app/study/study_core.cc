// What every seed study shares: the registry of studies, the bench matrix, the
// figures and their verdicts against the seed, the text pieces of the tables, and
// JSON, CSV and SVG. The seeds themselves are in study_<name>.cc.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/bench/stats.h"
#include "vmm/app/study/study.h"
#include "vmm/app/study/study_internal.h"
#include "vmm/report/csv.h"
#include "vmm/report/svg_chart.h"

namespace sigvisor::study {
namespace {

using json = nlohmann::ordered_json;
using bench::BenchResult;
using bench::Cell;
using bench::FormatNs;

// Each study's defaults keep `sigvisor study all` to a minute or two on this
// project's PVM hosts (guest CPL0 at ~1 us per instruction). Counts are exact for any
// ops; times need repetitions, not length. `all` is the seeds' studies, the ones with
// a seed: pvsig (no seed) reproduces no post and asks a question of the host, so it
// runs only when named.
const std::vector<StudyDef>& AllStudies() {
  static const std::vector<StudyDef> kStudies = {Dr7Study(),     PdaStudy(),   CerrStudy(),
                                                 DequeueStudy(), PvsigStudy(), IpiStudy()};
  return kStudies;
}

// "seed 000", or "no seed" for a study of this project's own (pvsig).
std::string SeedName(const StudyDef& def) {
  return def.seed.empty() ? "no seed" : absl::StrFormat("seed %s", def.seed);
}

constexpr double kSignificance = 0.05;

std::string Value(const Comparison& c, double v) {
  if (c.unit == Unit::kNs) return FormatNs(v);
  return Num(v);
}

// How a seed's direction reads in a verdict.
std::string SeedWording(Direction d) {
  return d == Direction::kSame ? "no change" : std::string(DirectionName(d));
}

std::string Header(const StudyContext& ctx) {
  const bench::Matrix& m = ctx.bench.matrix;
  std::vector<std::string> traps;
  for (TrapMechanism t : m.traps) traps.emplace_back(TrapMechanismName(t));
  if (!ctx.def.variants.empty()) {  // several builds side by side (StudyDef::variants)
    std::vector<std::string> names;
    for (const bench::VariantInfo& v : m.variants) names.push_back(v.name);
    std::string reference;
    if (ctx.reference != nullptr) {
      const bench::Matrix& r = ctx.reference->matrix;
      reference = absl::StrFormat("reference: %s on %s, %d runs; %s\n", ctx.def.reference_workload,
                                  r.variants.empty() ? "" : r.variants[0].name, r.repetitions,
                                  bench::CompletenessLine(*ctx.reference));
    }
    return absl::StrFormat(
        "== study %s (%s): %s ==\n"
        "builds: %s\n"
        "workload %s: %d ops per run, %d runs of each build per trap mechanism (%s), builds "
        "alternating\n%s\n%s",
        ctx.def.name, SeedName(ctx.def), ctx.def.title, absl::StrJoin(names, "; "),
        ctx.def.workload, m.ops, m.repetitions, absl::StrJoin(traps, ", "),
        bench::CompletenessLine(ctx.bench), reference);
  }
  return absl::StrFormat(
      "== study %s (%s): %s ==\n"
      "%s (%s) against %s (%s)\n"
      "workload %s: %d ops per run, %d runs of each variant per trap mechanism (%s), "
      "variants alternating\n%s\n",
      ctx.def.name, SeedName(ctx.def), ctx.def.title, ctx.old_name(), m.variants[0].settings,
      ctx.new_name(), m.variants[1].settings, ctx.def.workload, m.ops, m.repetitions,
      absl::StrJoin(traps, ", "), bench::CompletenessLine(ctx.bench));
}

// Under the header, above every table: the injections every run made, and what came of
// them over the runs, since every figure below includes their effect.
std::string InjectionNote(const StudyContext& ctx, const StudyInjections& injections) {
  if (injections.specs.empty()) return "";
  std::vector<std::string> specs;
  for (const std::string& spec : injections.specs) specs.push_back("--inject " + spec);
  std::map<std::string, uint64_t> outcomes;
  size_t runs = 0;
  for (const bench::RunSample& run : ctx.bench.runs) {
    if (!run.injections.empty()) ++runs;
    for (const auto& [outcome, count] : run.injections) outcomes[outcome] += count;
  }
  std::vector<std::string> came;
  for (const auto& [outcome, count] : outcomes) {
    came.push_back(absl::StrFormat("%d %s", count, outcome));
  }
  return absl::StrFormat(
      "INJECTED: every run made the same injections: %s (--seed %d); every figure and table "
      "below includes what they did (%s)\n",
      absl::StrJoin(specs, " "), injections.seed,
      came.empty() ? "no run recorded any"
                   : absl::StrFormat("%s over %d run%s", absl::StrJoin(came, ", "), runs,
                                     runs == 1 ? "" : "s"));
}

std::string Findings(const StudyContext& ctx) {
  std::string out;
  for (const Comparison& c : ctx.comparisons) {
    if (c.agrees() != false) continue;
    std::string where = c.trap ? absl::StrFormat(" (trap %s)", TrapMechanismName(*c.trap)) : "";
    if (!c.phase.empty() && c.phase != ctx.def.workload) where = " in " + c.phase + where;
    absl::StrAppendFormat(
        &out, "FINDING: %s%s: %s -> %s (%s) goes against the seed (%s%s)\n", c.label, where,
        Value(c, c.old_value), Value(c, c.new_value),
        c.unit == Unit::kNs ? Percent(c.change_percent() / 100) : SignedNum(c.change()),
        SeedWording(c.seed.direction), c.seed.note.empty() ? "" : ": " + std::string(c.seed.note));
  }
  return out;
}

}  // namespace

// ---- Names -------------------------------------------------------------------------

std::string_view DirectionName(Direction d) {
  switch (d) {
    case Direction::kNone:
      return "";
    case Direction::kLower:
      return "lower";
    case Direction::kHigher:
      return "higher";
    case Direction::kSame:
      return "same";
  }
  return "";
}

std::string_view UnitName(Unit u) {
  switch (u) {
    case Unit::kNs:
      return "ns";
    case Unit::kInstructions:
      return "instructions";
    case Unit::kBytes:
      return "bytes";
    case Unit::kTraps:
      return "traps";
    case Unit::kExits:
      return "exits";
    case Unit::kLoads:
      return "loads";
  }
  return "";
}

// ---- Figures -----------------------------------------------------------------------

void AddTime(StudyContext& ctx, std::string_view phase, TrapMechanism trap, TimeStat stat,
             std::string label, const SeedClaim& seed) {
  const Cell* a = ctx.Get(phase, 0, trap);
  const Cell* b = ctx.Get(phase, 1, trap);
  if (!a || !b || a->ns.n == 0 || b->ns.n == 0) return;
  Comparison c;
  c.metric = stat == TimeStat::kMin    ? "ns_per_op_min"
             : stat == TimeStat::kMean ? "ns_per_op_mean"
                                       : "ns_per_op_median";
  c.label = std::move(label);
  c.phase = std::string(phase);
  c.trap = trap;
  c.unit = Unit::kNs;
  auto pick = [stat](const bench::Summary& s) {
    return stat == TimeStat::kMin ? s.min : stat == TimeStat::kMean ? s.mean : s.median;
  };
  c.old_value = pick(a->ns);
  c.new_value = pick(b->ns);
  c.p_value = bench::MannWhitneyP(a->ns_per_op, b->ns_per_op);
  c.p_floor = bench::MannWhitneyMinP(a->ns_per_op.size(), b->ns_per_op.size());
  c.seed = seed;
  ctx.comparisons.push_back(std::move(c));
}

void AddCount(StudyContext& ctx, std::string_view phase, TrapMechanism trap, std::string metric,
              std::string label, Unit unit,
              const std::function<std::optional<double>(const bench::PerOpCounts&)>& get,
              const SeedClaim& seed, double per) {
  const Cell* a = ctx.Get(phase, 0, trap);
  const Cell* b = ctx.Get(phase, 1, trap);
  if (!a || !b) return;
  std::optional<double> old_value = get(a->per_op), new_value = get(b->per_op);
  if (!old_value || !new_value) return;
  Comparison c;
  c.metric = std::move(metric);
  c.label = std::move(label);
  c.phase = std::string(phase);
  c.trap = trap;
  c.unit = unit;
  c.old_value = *old_value / per;
  c.new_value = *new_value / per;
  c.exact = true;
  c.seed = seed;
  ctx.comparisons.push_back(std::move(c));
}

void AddKvmExits(StudyContext& ctx, std::string_view phase, TrapMechanism trap) {
  const Cell* a = ctx.Get(phase, 0, trap);
  const Cell* b = ctx.Get(phase, 1, trap);
  if (!a || !b || a->kvm_exits.n == 0 || b->kvm_exits.n == 0) return;
  Comparison c;
  c.metric = "kvm_exits_per_op";
  c.label = "KVM's own exits (median)";
  c.phase = std::string(phase);
  c.trap = trap;
  c.unit = Unit::kExits;
  c.old_value = a->kvm_exits.median;
  c.new_value = b->kvm_exits.median;
  c.p_value = bench::MannWhitneyP(a->kvm_exits_per_op, b->kvm_exits_per_op);
  c.p_floor = bench::MannWhitneyMinP(a->kvm_exits_per_op.size(), b->kvm_exits_per_op.size());
  ctx.comparisons.push_back(std::move(c));
}

void AddStatic(StudyContext& ctx, std::string metric, std::string label, Unit unit,
               double old_value, double new_value, const SeedClaim& seed) {
  Comparison c;
  c.metric = std::move(metric);
  c.label = std::move(label);
  c.unit = unit;
  c.old_value = old_value;
  c.new_value = new_value;
  c.exact = true;
  c.seed = seed;
  ctx.comparisons.push_back(std::move(c));
}

uint64_t TextBytes(const StudyContext& ctx, size_t which) {
  return ctx.bench.matrix.variants[which].text_bytes;
}

void AddTextBytes(StudyContext& ctx, const SeedClaim& seed) {
  ctx.extra["text_bytes"] = {{"old", TextBytes(ctx, 0)}, {"new", TextBytes(ctx, 1)}};
  AddStatic(ctx, "text_bytes", "kernel text (bytes)", Unit::kBytes, double(TextBytes(ctx, 0)),
            double(TextBytes(ctx, 1)), seed);
}

std::optional<double> Insns(const bench::PerOpCounts& c) { return c.kernel_insns; }
std::optional<double> Exits(const bench::PerOpCounts& c) { return c.exits; }
std::optional<double> Kind(const bench::PerOpCounts& c, const char* kind) {
  return c.traps_by_kind.at(kind);
}

const Comparison* FindComparison(const StudyContext& ctx, std::string_view metric,
                                 std::string_view phase, TrapMechanism trap) {
  for (const Comparison& c : ctx.comparisons) {
    if (c.metric == metric && c.phase == phase && c.trap == trap) return &c;
  }
  return nullptr;
}

std::vector<const bench::PhaseSample*> PhaseSamples(const Cell& cell) {
  std::vector<const bench::PhaseSample*> out;
  for (const bench::RunSample* run : cell.samples) {
    for (const bench::PhaseSample& p : run->phases) {
      if (p.name == cell.phase) out.push_back(&p);
    }
  }
  return out;
}

// ---- Text pieces --------------------------------------------------------------------

std::string Num(double v) {
  if (std::isnan(v)) return "-";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.2f", v);
}

std::string SignedNum(double v) {
  if (v == 0) return "0";
  return (v > 0 ? "+" : "") + Num(v);
}

std::string Percent(double fraction) {
  if (std::isnan(fraction) || std::isinf(fraction)) return "-";
  if (std::fabs(fraction) < 0.0005) return "0.0%";
  return absl::StrFormat("%+.1f%%", 100 * fraction);
}

// With nothing trapping, privileged instructions run as the rest of guest CPL0 does
// there: emulated on a PVM host, on the CPU on a hardware one.
std::string TrapNote(TrapMechanism trap, const bench::HostInfoSummary& host) {
  switch (trap) {
    case TrapMechanism::kOff:
      return host.cpl0_emulated
                 ? "trap off: nothing traps; privileged instructions run emulated with the rest "
                   "of guest CPL0"
                 : "trap off: nothing traps to the VMM; privileged instructions run on the CPU "
                   "with the rest of guest CPL0 (KVM handles any it intercepts itself)";
    case TrapMechanism::kPatch:
      return "trap patch: DR accesses and segment loads trap to the VMM (one exit each), as "
             "under a hypervisor that intercepts them";
    case TrapMechanism::kPv:
      return "trap pv: each build's debugreg=pv counterpart writes its debug registers into the "
             "VMM's page and counts them there (no exit; a hypercall only to load a "
             "breakpoint), as a paravirtual kernel does";
    case TrapMechanism::kHwGd:
      break;  // no study words it: its name alone
  }
  return absl::StrFormat("trap %s", TrapMechanismName(trap));
}

std::string ComparisonTable(const StudyContext& ctx, std::string_view per) {
  std::string out =
      absl::StrFormat("\nVM-level figures, per %s (%s -> %s)%s:\n", per, ctx.old_name(),
                      ctx.new_name(), ctx.injected ? ", the injections above included" : "");
  // A study with no seed (pvsig) has no verdicts to show, nor the columns' spaces
  // before them.
  const bool seeded = !ctx.def.seed.empty();
  auto add = [&out](std::string line) {
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  };
  add(absl::StrFormat("  %-38s %12s %12s %10s %9s%s", "", "old", "new", "change", "",
                      seeded ? "  against the seed" : ""));
  std::string group = "\x01";
  for (const Comparison& c : ctx.comparisons) {
    const std::string g =
        c.trap ? absl::StrFormat("trap %s", TrapMechanismName(*c.trap)) : "static (the images)";
    if (g != group) {
      group = g;
      absl::StrAppendFormat(&out, "  %s\n", g);
    }
    std::string label = c.label;
    if (!c.phase.empty() && c.phase != ctx.def.workload) label = c.phase + ": " + label;
    const bool time = c.unit == Unit::kNs;
    const std::string change = time ? Percent(c.change_percent() / 100) : SignedNum(c.change());
    const std::string percent =
        time || c.old_value == 0 ? "" : absl::StrFormat("(%s)", Percent(c.change_percent() / 100));
    add(absl::StrFormat("    %-36s %12s %12s %10s %9s%s", label, Value(c, c.old_value),
                        Value(c, c.new_value), change, percent, seeded ? "  " + c.Verdict() : ""));
  }
  return out;
}

std::string SpeedupLine(const Comparison* c, std::string_view seed_text) {
  if (c == nullptr) return "";
  const double speedup = c->old_value / c->new_value - 1;
  return absl::StrFormat("That's about a %s speedup (%s; %s); the seed: %s.\n", Percent(speedup),
                         c->Evidence(), c->metric == "ns_per_op_min" ? "best run" : "median run",
                         seed_text);
}

// ---- Comparison -----------------------------------------------------------------------

double Comparison::change_percent() const {
  if (old_value == 0) return new_value == 0 ? 0 : NAN;
  return 100 * (new_value - old_value) / old_value;
}

Direction Comparison::direction() const {
  if (new_value < old_value) return Direction::kLower;
  if (new_value > old_value) return Direction::kHigher;
  return Direction::kSame;
}

std::optional<bool> Comparison::significant() const {
  if (exact) return std::nullopt;
  if (too_few_runs()) return false;
  return p_value && *p_value < kSignificance;
}

bool Comparison::too_few_runs() const { return !exact && p_floor && *p_floor >= kSignificance; }

std::optional<bool> Comparison::agrees() const {
  if (seed.direction == Direction::kNone) return std::nullopt;
  if (exact) return direction() == seed.direction;
  if (significant() != true) return std::nullopt;
  return direction() == seed.direction;  // a significant change: never kSame
}

std::string Comparison::Verdict() const {
  if (seed.direction == Direction::kNone) return "the seed does not say";
  const std::string wording = SeedWording(seed.direction);
  const std::optional<bool> a = agrees();
  if (!a) return absl::StrFormat("%s; the seed: %s", Evidence(), wording);
  const std::string p = exact ? "" : absl::StrFormat("p=%.2g", p_value.value_or(1));
  if (*a)
    return p.empty() ? "agrees with the seed" : absl::StrFormat("agrees with the seed (%s)", p);
  return absl::StrFormat("GOES AGAINST THE SEED (%s%s): a finding", p.empty() ? "" : p + "; ",
                         "the seed: " + wording);
}

std::string Comparison::Evidence() const {
  if (exact) return "exact";
  if (too_few_runs()) {
    return absl::StrFormat("too few runs for significance (p cannot go below %.2g)", *p_floor);
  }
  const double p = p_value.value_or(1);
  if (p < kSignificance) return absl::StrFormat("p=%.2g", p);
  return absl::StrFormat("no evidence either way (p=%.2g)", p);
}

// ---- Studies ----------------------------------------------------------------------------

std::span<const StudyDef> Studies() { return AllStudies(); }

const StudyDef* FindStudy(std::string_view name) {
  for (const StudyDef& s : AllStudies()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

absl::StatusOr<std::vector<const StudyDef*>> ParseStudyNames(std::span<const std::string> names) {
  std::vector<std::string> known;
  for (const StudyDef& s : AllStudies()) known.emplace_back(s.name);
  const std::string choices = absl::StrJoin(known, ", ") + " or all";
  if (names.empty()) {
    return absl::InvalidArgumentError("`sigvisor study` needs a study: " + choices);
  }
  std::vector<const StudyDef*> out;
  for (const std::string& name : names) {
    if (name == "all") {
      if (names.size() > 1) {
        return absl::InvalidArgumentError("`sigvisor study all` takes no other study name");
      }
      for (const StudyDef& s : AllStudies()) {
        if (!s.seed.empty()) out.push_back(&s);
      }
      continue;
    }
    const StudyDef* study = FindStudy(name);
    if (study == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("no study '%s' (give %s)", name, choices));
    }
    if (std::find(out.begin(), out.end(), study) != out.end()) {
      return absl::InvalidArgumentError(absl::StrFormat("study '%s' is named twice", name));
    }
    out.push_back(study);
  }
  return out;
}

absl::StatusOr<bench::Matrix> StudyMatrix(const StudyDef& study, std::optional<uint64_t> ops,
                                          std::optional<uint32_t> repetitions,
                                          const std::vector<TrapMechanism>& traps,
                                          uint32_t memory_mib) {
  bench::Matrix m;
  m.workloads = {std::string(study.workload)};
  if (!study.variants.empty()) {
    // Bench's own parse: machine settings, and what run would refuse of them.
    // Debian's Abseil joins no std::string_view: strings.
    const std::vector<std::string> specs(study.variants.begin(), study.variants.end());
    absl::StatusOr<std::vector<bench::VariantInfo>> variants =
        bench::ParseVariantList(absl::StrJoin(specs, ";"));
    if (!variants.ok()) return variants.status();
    m.variants = *std::move(variants);
  }
  for (std::string_view spec : {study.old_variant, study.new_variant}) {
    if (!study.variants.empty()) break;
    absl::StatusOr<bench::VariantInfo> info = bench::DescribeBuiltVariant(spec);
    if (!info.ok()) return info.status();
    m.variants.push_back(*std::move(info));
  }
  m.traps = traps.empty() ? study.default_traps : traps;
  m.ops = ops.value_or(study.default_ops);
  m.repetitions = repetitions.value_or(study.default_repetitions);
  m.memory_mib = memory_mib;
  if (absl::Status s = bench::CheckWorkloadVcpus(m); !s.ok()) return s;
  return m;
}

absl::StatusOr<std::optional<bench::Matrix>> ReferenceMatrix(const StudyDef& study,
                                                             const bench::Matrix& main) {
  if (study.reference_workload.empty()) return std::optional<bench::Matrix>();
  absl::StatusOr<std::vector<bench::VariantInfo>> variants =
      bench::ParseVariantList(study.reference_variant);
  if (!variants.ok()) return variants.status();
  bench::Matrix m = main;
  m.workloads = {std::string(study.reference_workload)};
  m.variants = *std::move(variants);
  if (absl::Status s = bench::CheckWorkloadVcpus(m); !s.ok()) return s;
  return std::optional<bench::Matrix>(std::move(m));
}

StudyReport AnalyzeStudy(const StudyDef& study, bench::BenchResult result,
                         const StudyInjections& injections, const StudyHostCosts& costs,
                         std::optional<bench::BenchResult> reference) {
  StudyReport report;
  report.def = &study;
  report.bench = std::move(result);
  report.reference = std::move(reference);
  StudyContext ctx{study, report.bench, bench::Cells(report.bench), {}, "", json::object(), ""};
  ctx.injected = !injections.specs.empty();
  ctx.costs = costs;
  if (report.reference) ctx.reference = &*report.reference;
  ctx.text = Header(ctx) + InjectionNote(ctx, injections);
  if (study.analyze != nullptr) study.analyze(ctx);
  if (!ctx.notes.empty()) ctx.text += "\n" + ctx.notes;
  std::string findings = Findings(ctx);
  if (!findings.empty()) ctx.text += "\n" + findings;
  for (const Cell& cell : ctx.cells) {
    for (const std::string& mismatch : cell.mismatches) {
      ctx.text +=
          absl::StrFormat("WARNING: counts differ across repetitions (%s, %s, trap %s): %s\n",
                          cell.phase, report.bench.matrix.variants[cell.variant].name,
                          TrapMechanismName(report.bench.matrix.traps[cell.trap]), mismatch);
    }
    for (const std::string& note : bench::TimeNotes(cell)) {
      ctx.text += absl::StrFormat("WARNING: %s, %s, trap %s: %s\n", cell.phase,
                                  report.bench.matrix.variants[cell.variant].name,
                                  TrapMechanismName(report.bench.matrix.traps[cell.trap]), note);
    }
  }
  for (const std::string& w : report.bench.warnings) ctx.text += "warning: " + w + "\n";
  if (!report.bench.complete()) ctx.text += bench::CompletenessLine(report.bench) + "\n";
  if (report.reference) {
    for (const std::string& w : report.reference->warnings) {
      ctx.text += "warning (reference): " + w + "\n";
    }
    if (!report.reference->complete()) {
      ctx.text += "reference: " + bench::CompletenessLine(*report.reference) + "\n";
    }
  }
  report.comparisons = std::move(ctx.comparisons);
  report.text = std::move(ctx.text);
  report.extra = std::move(ctx.extra);
  return report;
}

namespace {

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json ComparisonToJson(const Comparison& c) {
  const std::optional<bool> agrees = c.agrees();
  json seed = nullptr;
  if (c.seed.direction != Direction::kNone) {
    seed = {{"direction", DirectionName(c.seed.direction)},
            {"old", Optional(c.seed.old_value)},
            {"new", Optional(c.seed.new_value)},
            {"note", c.seed.note}};
  }
  const double percent = c.change_percent();
  return {{"metric", c.metric},
          {"label", c.label},
          {"phase", c.phase.empty() ? json(nullptr) : json(c.phase)},
          {"trap", c.trap ? json(TrapMechanismName(*c.trap)) : json(nullptr)},
          {"unit", UnitName(c.unit)},
          {"old", c.old_value},
          {"new", c.new_value},
          {"change", c.change()},
          {"change_percent", std::isnan(percent) ? json(nullptr) : json(percent)},
          {"exact", c.exact},
          {"p_value", Optional(c.p_value)},
          {"direction", DirectionName(c.direction())},
          {"significant", c.significant() ? json(*c.significant()) : json(nullptr)},
          {"seed", seed},
          {"agrees", agrees ? json(*agrees) : json(nullptr)},
          {"verdict", c.Verdict()}};
}

}  // namespace

nlohmann::ordered_json StudyToJson(const StudyReport& report) {
  const StudyDef& d = *report.def;
  const bench::Matrix& m = report.bench.matrix;
  json comparisons = json::array();
  for (const Comparison& c : report.comparisons) comparisons.push_back(ComparisonToJson(c));
  auto variant = [](const bench::VariantInfo& v) {
    return json{{"name", v.name}, {"settings", v.settings}, {"text_bytes", v.text_bytes}};
  };
  json out = {{"name", d.name},
              {"seed", d.seed},
              {"title", d.title},
              {"workload", d.workload},
              {"old_variant", m.variants.size() > 0 ? variant(m.variants[0]) : json(nullptr)},
              {"new_variant", m.variants.size() > 1 ? variant(m.variants[1]) : json(nullptr)},
              {"complete", report.complete()},
              {"comparisons", comparisons},
              {"static", report.extra},
              {"linux", report.linux_column},
              {"text", report.text},
              {"bench", bench::BenchToJson(report.bench)}};
  // A study of several builds side by side (StudyDef::variants): every one of them, and
  // its reference bench.
  if (!d.variants.empty()) {
    json variants = json::array();
    for (const bench::VariantInfo& v : m.variants) variants.push_back(variant(v));
    out["variants"] = std::move(variants);
  }
  if (report.reference) out["reference_bench"] = bench::BenchToJson(*report.reference);
  return out;
}

nlohmann::ordered_json StudiesToJson(const std::vector<StudyReport>& reports,
                                     const std::vector<std::string>& not_run) {
  json studies = json::array();
  bool complete = not_run.empty();
  json host = nullptr;
  for (const StudyReport& r : reports) {
    studies.push_back(StudyToJson(r));
    complete = complete && r.complete();
    host = {{"kind", r.bench.host.kind}, {"cpl0_emulated", r.bench.host.cpl0_emulated}};
  }
  return {{"schema", kStudySchema},
          {"complete", complete},
          {"host", host},
          {"studies", studies},
          {"studies_not_run", not_run}};
}

std::string StudiesToCsv(const std::vector<StudyReport>& reports) {
  CsvWriter csv({"study",       "seed",           "metric",         "label",       "phase",
                 "trap",        "unit",           "old_variant",    "new_variant", "old",
                 "new",         "change",         "change_percent", "p_value",     "exact",
                 "significant", "seed_direction", "seed_old",       "seed_new",    "agrees",
                 "verdict"});
  for (const StudyReport& r : reports) {
    const bench::Matrix& m = r.bench.matrix;
    for (const Comparison& c : r.comparisons) {
      const std::optional<bool> agrees = c.agrees();
      csv.AddRow({std::string(r.def->name),
                  std::string(r.def->seed),
                  c.metric,
                  c.label,
                  c.phase,
                  c.trap ? std::string(TrapMechanismName(*c.trap)) : "",
                  std::string(UnitName(c.unit)),
                  m.variants[0].name,
                  m.variants[1].name,
                  CsvWriter::Number(c.old_value, 1),
                  CsvWriter::Number(c.new_value, 1),
                  CsvWriter::Number(c.change(), 1),
                  CsvWriter::Number(c.change_percent(), 3),
                  c.p_value ? CsvWriter::Number(*c.p_value, 6) : "",
                  c.exact ? "true" : "false",
                  c.significant() ? (*c.significant() ? "true" : "false") : "",
                  std::string(DirectionName(c.seed.direction)),
                  c.seed.old_value ? CsvWriter::Number(*c.seed.old_value, 3) : "",
                  c.seed.new_value ? CsvWriter::Number(*c.seed.new_value, 3) : "",
                  agrees ? (*agrees ? "true" : "false") : "",
                  c.Verdict()});
    }
  }
  return csv.str();
}

std::string StudiesToSvg(const std::vector<StudyReport>& reports) {
  std::vector<ChartSection> sections;
  for (const StudyReport& r : reports) {
    const bench::Matrix& m = r.bench.matrix;
    ChartSection section;
    section.heading =
        absl::StrFormat("study %s (%s): %s", r.def->name, SeedName(*r.def), r.def->title);
    section.note = absl::StrFormat("%s, %d ops per run, %d runs per variant%s", r.def->workload,
                                   m.ops, m.repetitions, r.complete() ? "" : " (INCOMPLETE)");
    const std::vector<Cell> cells = bench::Cells(r.bench);
    for (const Cell& cell : cells) {
      if (cell.variant != 0) continue;
      // Every other build beside the first (two for the seeds' studies).
      std::vector<const Cell*> others;
      for (size_t v = 1; v < m.variants.size(); ++v) {
        others.push_back(bench::FindCell(cells, r.bench, m.workloads[cell.workload], cell.phase,
                                         m.variants[v].name, m.traps[cell.trap]));
      }
      ChartPanel panel;
      panel.title =
          absl::StrFormat("%s, trap %s", cell.phase, TrapMechanismName(m.traps[cell.trap]));
      panel.axis =
          "us per op: median over runs, whiskers min - max; on the bar: time / old build's";
      others.insert(others.begin(), &cell);
      for (const Cell* c : others) {
        if (c == nullptr) continue;
        panel.bars.push_back(
            bench::TimeBar(m.variants[c->variant].name, *c, &cell.ns,
                           c->per_op.kernel_insns
                               ? absl::StrFormat(", %s kernel insns", Num(*c->per_op.kernel_insns))
                               : ""));
      }
      section.panels.push_back(std::move(panel));
    }
    sections.push_back(std::move(section));
  }
  return RenderBarChartSvg("sigvisor study: the seeds' experiments, per-op cost per variant",
                           sections);
}

}  // namespace sigvisor::study
