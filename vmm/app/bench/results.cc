#include "vmm/app/bench/results.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/report/kvm_exits.h"
#include "vmm/report/kvm_stat_check.h"

namespace sigvisor::bench {
namespace {

using json = nlohmann::ordered_json;

double PerOp(uint64_t total, uint64_t ops) {
  return ops ? static_cast<double>(total) / static_cast<double>(ops) : 0.0;
}

uint64_t TrapsOf(const PhaseSample& phase, const std::string& kind) {
  auto it = phase.traps.find(kind);
  return it == phase.traps.end() ? 0 : it->second;
}

// "832 (4 runs), 833 (1 run)" for a metric whose per-op values differ.
std::string DescribeValues(const std::vector<double>& values) {
  std::map<double, int> counts;
  for (double v : values) ++counts[v];
  std::vector<std::string> parts;
  for (const auto& [value, count] : counts) {
    parts.push_back(absl::StrFormat("%g (%d run%s)", value, count, count == 1 ? "" : "s"));
  }
  return absl::StrJoin(parts, ", ");
}

json SummaryToJson(const Summary& s) {
  if (s.n == 0) return nullptr;
  return {
      {"median", s.median}, {"min", s.min}, {"max", s.max}, {"mean", s.mean}, {"stddev", s.stddev}};
}

json VariantToJson(const VariantInfo& v) {
  json out = {{"name", v.name},
              {"settings", v.settings},
              {"text_bytes", v.text_bytes},
              {"image_fnv1a64", v.image_fnv1a64}};
  // Its machine, where the spec named one (the name ends in the same suffix).
  if (v.vcpus != 1) out["vcpus"] = v.vcpus;
  if (!v.ipi.empty()) out["ipi"] = v.ipi;
  if (!v.lapic.empty()) out["lapic"] = v.lapic;
  return out;
}

// The interrupts KVM injected into a vCPU (irq_injections), unless this host's KVM
// does not keep them.
std::optional<uint64_t> InterruptsOf(const StatsSnapshot& stats,
                                     const std::vector<UncountedKvmStat>& uncounted) {
  const StatsSnapshot kept = WithoutUncounted(stats, uncounted);
  auto it = kept.find("irq_injections");
  return it == kept.end() ? std::nullopt : std::optional<uint64_t>(it->second);
}

template <typename T>
json OptionalToJson(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

// KVM's exits by reason, in the order of the table (vmm/report/kvm_exits.h), then any
// other a result holds.
template <typename T>
json KvmExitsByReasonToJson(const std::map<std::string, T>& by_reason) {
  json out = json::object();
  for (const KvmExitStat& stat : kKvmExitReasons) {
    if (auto it = by_reason.find(stat.name); it != by_reason.end()) out[stat.name] = it->second;
  }
  for (const auto& [reason, value] : by_reason) {
    if (!out.contains(reason)) out[reason] = value;
  }
  return out;
}

json PhaseToJson(const PhaseSample& p) {
  json traps = json::object();
  for (const auto& [kind, count] : p.traps) traps[kind] = count;
  return {{"name", p.name},
          {"ops", p.ops},
          {"exits", p.exits},
          {"traps", traps},
          {"dr_loads", p.dr_loads},
          {"kernel_insns", OptionalToJson(p.kernel_insns)},
          {"kvm_exits", OptionalToJson(p.kvm_exits)},
          {"kvm_exits_by_reason", KvmExitsByReasonToJson(p.kvm_exits_by_reason)},
          {"wall_ns", OptionalToJson(p.wall_ns)},
          {"tsc_cycles", OptionalToJson(p.tsc_cycles)},
          {"time_status", p.time_measured() ? "measured" : "below_calibration_noise"},
          {"clocks_agree", OptionalToJson(p.clocks_agree)}};
}

// A phase's row, with its vCPUs where it had several.
json PhaseRowToJson(const PhaseSample& p) {
  json row = PhaseToJson(p);
  if (p.vcpus.empty()) return row;
  json vcpus = json::array();
  for (const VcpuPhaseSample& v : p.vcpus) {
    vcpus.push_back({{"vcpu", v.vcpu},
                     {"exits", v.exits},
                     {"ipis", OptionalToJson(v.ipis)},
                     {"interrupts", OptionalToJson(v.interrupts)}});
  }
  row["vcpus"] = std::move(vcpus);
  return row;
}

template <typename T>
absl::Status Get(const nlohmann::json& object, const char* key, T& out) {
  if (!object.is_object() || !object.contains(key)) {
    return absl::InvalidArgumentError(absl::StrFormat("missing field '%s'", key));
  }
  try {
    out = object.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    return absl::InvalidArgumentError(absl::StrFormat("field '%s' has the wrong type", key));
  }
  return absl::OkStatus();
}

// A field that must be present and may be null (nullopt).
template <typename T>
absl::Status GetOptional(const nlohmann::json& object, const char* key, std::optional<T>& out) {
  nlohmann::json value;
  if (absl::Status s = Get(object, key, value); !s.ok()) return s;
  if (value.is_null()) {
    out.reset();
    return absl::OkStatus();
  }
  T parsed;
  if (absl::Status s = Get(object, key, parsed); !s.ok()) return s;
  out = parsed;
  return absl::OkStatus();
}

#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    if (absl::Status s = (expr); !s.ok()) return s; \
  } while (0)

std::vector<std::string> TrapNames(const std::vector<TrapMechanism>& traps) {
  std::vector<std::string> names;
  for (TrapMechanism trap : traps) names.emplace_back(TrapMechanismName(trap));
  return names;
}

absl::StatusOr<size_t> IndexOf(const std::vector<std::string>& names, const std::string& name,
                               const char* what) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a run names %s '%s', which is not in the matrix", what, name));
  }
  return static_cast<size_t>(it - names.begin());
}

// Each vCPU's per-op medians over a cell's samples: the vCPUs every sample has (a
// variant's runs all have its @vcpus=N).
std::vector<VcpuPerOp> VcpusPerOp(const std::vector<const PhaseSample*>& samples) {
  std::vector<VcpuPerOp> out;
  if (samples.empty()) return out;
  for (const VcpuPhaseSample& first : samples[0]->vcpus) {
    std::vector<double> exits, ipis, interrupts;
    for (const PhaseSample* p : samples) {
      auto it = std::find_if(p->vcpus.begin(), p->vcpus.end(),
                             [&](const VcpuPhaseSample& v) { return v.vcpu == first.vcpu; });
      if (it == p->vcpus.end()) return {};
      exits.push_back(PerOp(it->exits, p->ops));
      if (it->ipis) ipis.push_back(PerOp(*it->ipis, p->ops));
      if (it->interrupts) interrupts.push_back(PerOp(*it->interrupts, p->ops));
    }
    VcpuPerOp row{.vcpu = first.vcpu, .exits = Summarize(exits).median};
    if (ipis.size() == samples.size()) row.ipis = Summarize(ipis).median;
    if (interrupts.size() == samples.size()) row.interrupts = Summarize(interrupts).median;
    out.push_back(row);
  }
  return out;
}

}  // namespace

uint64_t PhaseSample::traps_total() const {
  uint64_t total = 0;
  for (const auto& [kind, count] : traps) total += count;
  return total;
}

RunSample SampleFromResult(const RunSpec& spec, const RunResult& result, bool cpl0_emulated) {
  RunSample sample;
  sample.spec = spec;
  sample.outcome = std::string(OutcomeName(result.outcome));
  sample.exit_code = result.exit_code;
  sample.diagnosis = result.diagnosis;
  sample.wall_ns = result.run_ns;
  // KVM's statistics this host does not keep are left out, as in the run's reports.
  const std::vector<UncountedKvmStat> uncounted = UncountedKvmStats(result);
  for (const PhaseResult& phase : result.phases) {
    PhaseSample p;
    p.name = phase.name;
    p.ops = phase.ops;
    p.exits = phase.exits_total;
    for (const auto& [kind, count] : phase.traps.by_kind) p.traps[kind] = count;
    p.dr_loads = phase.traps.dr_loads;
    auto insns = phase.kvm_stats.find("insn_emulation");
    if (cpl0_emulated && insns != phase.kvm_stats.end()) p.kernel_insns = insns->second;
    if (const std::optional<KvmExits> kvm =
            KvmExitsOf(WithoutUncounted(phase.kvm_stats, uncounted));
        kvm && kvm->total) {
      p.kvm_exits = kvm->total;
      p.kvm_exits_by_reason.insert(kvm->by_reason.begin(), kvm->by_reason.end());
    }
    p.wall_ns = phase.MeasuredWallNs();
    p.tsc_cycles = phase.MeasuredTscCycles();
    p.clocks_agree = phase.clocks_agree;
    if (!phase.other_vcpus.empty()) {
      // The guest's count is by CPU number, which is the vCPU's index.
      auto ipis_of = [&](int vcpu) -> std::optional<uint64_t> {
        const GuestIpis* ipis = phase.guest_ipis_of(vcpu);
        return ipis ? std::optional<uint64_t>(ipis->received) : std::nullopt;
      };
      p.vcpus.push_back({.vcpu = 0,
                         .exits = phase.exits_total,
                         .ipis = ipis_of(0),
                         .interrupts = InterruptsOf(phase.kvm_stats, uncounted)});
      for (const VcpuSample& other : phase.other_vcpus) {
        p.vcpus.push_back({.vcpu = other.vcpu,
                           .exits = Sum(other.exits),
                           .ipis = ipis_of(other.vcpu),
                           .interrupts = InterruptsOf(other.kvm_stats, uncounted)});
      }
    }
    sample.phases.push_back(std::move(p));
  }
  return sample;
}

size_t BenchResult::runs_ok() const {
  return static_cast<size_t>(
      std::count_if(runs.begin(), runs.end(), [](const RunSample& r) { return r.ok(); }));
}

bool BenchResult::complete() const {
  return !interrupted && runs.size() == runs_expected && runs_failed() == 0;
}

std::vector<Cell> Cells(const BenchResult& result) {
  std::vector<Cell> cells;
  const Matrix& m = result.matrix;
  for (size_t w = 0; w < m.workloads.size(); ++w) {
    // The workload's phases, in the order its runs reported them. A failed run's are
    // kept: each ended normally, before whatever failed the run.
    std::vector<std::string> phases;
    for (const RunSample& run : result.runs) {
      if (run.spec.workload != w) continue;
      for (const PhaseSample& p : run.phases) {
        if (std::find(phases.begin(), phases.end(), p.name) == phases.end())
          phases.push_back(p.name);
      }
    }
    for (const std::string& phase : phases) {
      for (size_t t = 0; t < m.traps.size(); ++t) {
        for (size_t v = 0; v < m.variants.size(); ++v) {
          Cell cell;
          cell.workload = w;
          cell.variant = v;
          cell.trap = t;
          cell.phase = phase;
          cell.ops = m.ops;
          std::vector<const PhaseSample*> phase_samples;
          for (const RunSample& run : result.runs) {
            if (run.spec.workload != w || run.spec.variant != v || run.spec.trap != t) {
              continue;
            }
            for (const PhaseSample& p : run.phases) {
              if (p.name != phase) continue;
              cell.samples.push_back(&run);
              phase_samples.push_back(&p);
              cell.ops = p.ops;
              break;
            }
          }
          // Per-op values of each count, checked for agreement.
          auto metric = [&](const char* name, auto get) {
            std::vector<double> values;
            for (const PhaseSample* p : phase_samples) values.push_back(PerOp(get(*p), p->ops));
            if (values.empty()) return 0.0;
            if (std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) !=
                values.end()) {
              cell.counts_agree = false;
              cell.mismatches.push_back(
                  absl::StrFormat("%s per op: %s", name, DescribeValues(values)));
            }
            return Summarize(values).median;
          };
          cell.per_op.exits = metric("exits", [](const PhaseSample& p) { return p.exits; });
          cell.per_op.traps = metric("traps", [](const PhaseSample& p) { return p.traps_total(); });
          for (const char* kind : kTrapKinds) {
            cell.per_op.traps_by_kind[kind] =
                metric(kind, [kind](const PhaseSample& p) { return TrapsOf(p, kind); });
          }
          cell.per_op.dr_loads =
              metric("dr_loads", [](const PhaseSample& p) { return p.dr_loads; });
          const bool insns =
              !phase_samples.empty() &&
              std::all_of(phase_samples.begin(), phase_samples.end(),
                          [](const PhaseSample* p) { return p->kernel_insns.has_value(); });
          if (insns) {
            cell.per_op.kernel_insns =
                metric("kernel_insns", [](const PhaseSample& p) { return *p.kernel_insns; });
          }
          // KVM's own exits: summarised, not checked for agreement (the host's events).
          if (!phase_samples.empty() &&
              std::all_of(phase_samples.begin(), phase_samples.end(),
                          [](const PhaseSample* p) { return p->kvm_exits.has_value(); })) {
            std::set<std::string> reasons;
            for (const PhaseSample* p : phase_samples) {
              cell.kvm_exits_per_op.push_back(PerOp(*p->kvm_exits, p->ops));
              for (const auto& [reason, count] : p->kvm_exits_by_reason) reasons.insert(reason);
            }
            cell.kvm_exits = Summarize(cell.kvm_exits_per_op);
            for (const std::string& reason : reasons) {
              std::vector<double> values;
              for (const PhaseSample* p : phase_samples) {
                auto it = p->kvm_exits_by_reason.find(reason);
                values.push_back(
                    PerOp(it == p->kvm_exits_by_reason.end() ? 0 : it->second, p->ops));
              }
              cell.kvm_exits_by_reason[reason] = Summarize(values).median;
            }
          }
          for (const PhaseSample* p : phase_samples) {
            if (!p->time_measured()) {
              ++cell.times_unmeasured;
              continue;
            }
            cell.ns_per_op.push_back(PerOp(*p->wall_ns, p->ops));
            cell.tsc_per_op.push_back(PerOp(*p->tsc_cycles, p->ops));
            if (p->clocks_agree == false) ++cell.clocks_disagree;
          }
          cell.ns = Summarize(cell.ns_per_op);
          cell.tsc = Summarize(cell.tsc_per_op);
          cell.vcpus = VcpusPerOp(phase_samples);
          cells.push_back(std::move(cell));
        }
      }
    }
  }
  return cells;
}

const Cell* FindCell(const std::vector<Cell>& cells, const BenchResult& result,
                     std::string_view workload, std::string_view phase, std::string_view variant,
                     TrapMechanism trap) {
  const Matrix& m = result.matrix;
  for (const Cell& cell : cells) {
    if (m.workloads[cell.workload] == workload && cell.phase == phase &&
        m.variants[cell.variant].name == variant && m.traps[cell.trap] == trap) {
      return &cell;
    }
  }
  return nullptr;
}

nlohmann::ordered_json BenchToJson(const BenchResult& result) {
  const Matrix& m = result.matrix;
  json variants = json::array();
  for (const VariantInfo& v : m.variants) variants.push_back(VariantToJson(v));
  json cells = json::array();
  for (const Cell& cell : Cells(result)) {
    json traps_by_kind = json::object();
    for (const auto& [kind, value] : cell.per_op.traps_by_kind) traps_by_kind[kind] = value;
    const bool measured = !cell.samples.empty();
    json per_op = nullptr;
    if (measured) {
      per_op = {{"exits", cell.per_op.exits},
                {"traps", cell.per_op.traps},
                {"traps_by_kind", traps_by_kind},
                {"dr_loads", cell.per_op.dr_loads},
                {"kernel_insns",
                 cell.per_op.kernel_insns ? json(*cell.per_op.kernel_insns) : json(nullptr)}};
    }
    cells.push_back({{"workload", m.workloads[cell.workload]},
                     {"phase", cell.phase},
                     {"variant", m.variants[cell.variant].name},
                     {"trap", TrapMechanismName(m.traps[cell.trap])},
                     {"ops", cell.ops},
                     {"samples", cell.samples.size()},
                     {"times_unmeasured", cell.times_unmeasured},
                     {"clocks_disagree", cell.clocks_disagree},
                     {"counts_agree", cell.counts_agree},
                     {"count_mismatches", cell.mismatches},
                     {"per_op", per_op},
                     {"ns_per_op", SummaryToJson(cell.ns)},
                     {"tsc_cycles_per_op", SummaryToJson(cell.tsc)},
                     {"kvm_exits_per_op", SummaryToJson(cell.kvm_exits)},
                     {"kvm_exits_by_reason_per_op",
                      cell.kvm_exits.n > 0 ? KvmExitsByReasonToJson(cell.kvm_exits_by_reason)
                                           : json(nullptr)}});
    if (!cell.vcpus.empty()) {
      json vcpus = json::array();
      for (const VcpuPerOp& v : cell.vcpus) {
        vcpus.push_back({{"vcpu", v.vcpu},
                         {"exits", v.exits},
                         {"ipis", OptionalToJson(v.ipis)},
                         {"interrupts", OptionalToJson(v.interrupts)}});
      }
      cells.back()["vcpus_per_op"] = std::move(vcpus);
    }
  }
  json runs = json::array();
  for (const RunSample& run : result.runs) {
    json phases = json::array();
    for (const PhaseSample& p : run.phases) phases.push_back(PhaseRowToJson(p));
    json row = {{"index", run.spec.index},
                {"shard", run.shard},
                {"workload", m.workloads[run.spec.workload]},
                {"variant", m.variants[run.spec.variant].name},
                {"trap", TrapMechanismName(m.traps[run.spec.trap])},
                {"repetition", run.spec.repetition},
                {"outcome", run.outcome},
                {"exit_code", run.exit_code},
                {"diagnosis", run.diagnosis.empty() ? json(nullptr) : json(run.diagnosis)},
                {"wall_ns", run.wall_ns},
                {"phases", phases}};
    if (!run.injections.empty()) row["injections"] = run.injections;
    runs.push_back(std::move(row));
  }
  return {
      {"schema", kBenchSchema},
      {"complete", result.complete()},
      {"interrupted", result.interrupted},
      {"host", {{"kind", result.host.kind}, {"cpl0_emulated", result.host.cpl0_emulated}}},
      {"matrix",
       {{"workloads", m.workloads},
        {"variants", variants},
        {"traps", TrapNames(m.traps)},
        {"repetitions", m.repetitions},
        {"ops", m.ops},
        {"warmup", m.warmup},
        {"memory_mib", m.memory_mib},
        {"restored", m.restored},
        {"runs", m.runs()}}},
      {"shards", {{"count", result.shard_count}, {"included", result.shards}}},
      {"runs_expected", result.runs_expected},
      {"runs_measured", result.runs_ok()},
      {"runs_failed", result.runs_failed()},
      {"cells", cells},
      {"runs", runs},
      {"warnings", result.warnings},
  };
}

absl::StatusOr<BenchResult> BenchFromJson(const nlohmann::json& doc) {
  std::string schema;
  RETURN_IF_ERROR(Get(doc, "schema", schema));
  if (schema != kBenchSchema) {
    return absl::InvalidArgumentError(
        absl::StrFormat("schema '%s' is not %s", schema, kBenchSchema));
  }
  BenchResult result;
  nlohmann::json host, matrix, shards, runs;
  RETURN_IF_ERROR(Get(doc, "host", host));
  RETURN_IF_ERROR(Get(host, "kind", result.host.kind));
  RETURN_IF_ERROR(Get(host, "cpl0_emulated", result.host.cpl0_emulated));
  RETURN_IF_ERROR(Get(doc, "matrix", matrix));
  Matrix& m = result.matrix;
  RETURN_IF_ERROR(Get(matrix, "workloads", m.workloads));
  std::vector<std::string> trap_names;
  RETURN_IF_ERROR(Get(matrix, "traps", trap_names));
  for (const std::string& name : trap_names) {
    std::optional<TrapMechanism> mechanism = ParseTrapMechanism(name);
    if (!mechanism) {
      return absl::InvalidArgumentError(
          absl::StrFormat("field 'traps' holds '%s', which is not a trap mechanism", name));
    }
    m.traps.push_back(*mechanism);
  }
  RETURN_IF_ERROR(Get(matrix, "repetitions", m.repetitions));
  RETURN_IF_ERROR(Get(matrix, "ops", m.ops));
  // Results written before --warmup existed had the guest's default, one.
  if (matrix.contains("warmup")) RETURN_IF_ERROR(Get(matrix, "warmup", m.warmup));
  RETURN_IF_ERROR(Get(matrix, "memory_mib", m.memory_mib));
  // Results written before --restore existed booted every run.
  if (matrix.contains("restored")) RETURN_IF_ERROR(Get(matrix, "restored", m.restored));
  nlohmann::json variants;
  RETURN_IF_ERROR(Get(matrix, "variants", variants));
  if (!variants.is_array()) return absl::InvalidArgumentError("field 'variants' is not a list");
  std::vector<std::string> variant_names;
  for (const nlohmann::json& v : variants) {
    VariantInfo info;
    RETURN_IF_ERROR(Get(v, "name", info.name));
    RETURN_IF_ERROR(Get(v, "settings", info.settings));
    RETURN_IF_ERROR(Get(v, "text_bytes", info.text_bytes));
    RETURN_IF_ERROR(Get(v, "image_fnv1a64", info.image_fnv1a64));
    // Its machine: absent for one vCPU and no IPI way or local APICs named (and before
    // variants had one).
    if (v.contains("vcpus")) RETURN_IF_ERROR(Get(v, "vcpus", info.vcpus));
    if (v.contains("ipi")) RETURN_IF_ERROR(Get(v, "ipi", info.ipi));
    if (v.contains("lapic")) RETURN_IF_ERROR(Get(v, "lapic", info.lapic));
    variant_names.push_back(info.name);
    m.variants.push_back(std::move(info));
  }
  RETURN_IF_ERROR(Get(doc, "shards", shards));
  RETURN_IF_ERROR(Get(shards, "count", result.shard_count));
  RETURN_IF_ERROR(Get(shards, "included", result.shards));
  RETURN_IF_ERROR(Get(doc, "runs_expected", result.runs_expected));
  RETURN_IF_ERROR(Get(doc, "interrupted", result.interrupted));
  RETURN_IF_ERROR(Get(doc, "warnings", result.warnings));
  if (result.shard_count == 0) return absl::InvalidArgumentError("shard count 0");
  for (uint32_t s : result.shards) {
    if (s == 0 || s > result.shard_count) {
      return absl::InvalidArgumentError(absl::StrFormat("shard %d of %d", s, result.shard_count));
    }
  }
  RETURN_IF_ERROR(Get(doc, "runs", runs));
  if (!runs.is_array()) return absl::InvalidArgumentError("field 'runs' is not a list");
  const size_t total = m.runs();
  for (const nlohmann::json& r : runs) {
    RunSample run;
    std::string workload, variant, trap;
    nlohmann::json diagnosis, phases;
    RETURN_IF_ERROR(Get(r, "index", run.spec.index));
    RETURN_IF_ERROR(Get(r, "shard", run.shard));
    RETURN_IF_ERROR(Get(r, "workload", workload));
    RETURN_IF_ERROR(Get(r, "variant", variant));
    RETURN_IF_ERROR(Get(r, "trap", trap));
    RETURN_IF_ERROR(Get(r, "repetition", run.spec.repetition));
    RETURN_IF_ERROR(Get(r, "outcome", run.outcome));
    RETURN_IF_ERROR(Get(r, "exit_code", run.exit_code));
    RETURN_IF_ERROR(Get(r, "diagnosis", diagnosis));
    if (diagnosis.is_string()) run.diagnosis = diagnosis.get<std::string>();
    RETURN_IF_ERROR(Get(r, "wall_ns", run.wall_ns));
    if (auto injections = r.find("injections"); injections != r.end()) {
      if (!injections->is_object()) {
        return absl::InvalidArgumentError("field 'injections' is not an object");
      }
      for (const auto& [outcome, count] : injections->items()) {
        if (!count.is_number_unsigned()) {
          return absl::InvalidArgumentError("field 'injections' holds a non-count");
        }
        run.injections[outcome] = count.get<uint64_t>();
      }
    }
    absl::StatusOr<size_t> w = IndexOf(m.workloads, workload, "workload");
    absl::StatusOr<size_t> v = IndexOf(variant_names, variant, "variant");
    // By name, as the document gives it (trap_names is m.traps, index for index), so
    // that a run's unknown name is refused as any other field's.
    absl::StatusOr<size_t> t = IndexOf(trap_names, trap, "trap mechanism");
    if (!w.ok()) return w.status();
    if (!v.ok()) return v.status();
    if (!t.ok()) return t.status();
    run.spec.workload = *w;
    run.spec.variant = *v;
    run.spec.trap = *t;
    if (run.spec.index >= total || run.spec.repetition >= m.repetitions) {
      return absl::InvalidArgumentError(
          absl::StrFormat("run %d is outside the matrix (%d runs)", run.spec.index, total));
    }
    RETURN_IF_ERROR(Get(r, "phases", phases));
    if (!phases.is_array()) return absl::InvalidArgumentError("field 'phases' is not a list");
    for (const nlohmann::json& ph : phases) {
      PhaseSample p;
      nlohmann::json insns;
      RETURN_IF_ERROR(Get(ph, "name", p.name));
      RETURN_IF_ERROR(Get(ph, "ops", p.ops));
      RETURN_IF_ERROR(Get(ph, "exits", p.exits));
      RETURN_IF_ERROR(Get(ph, "traps", p.traps));
      RETURN_IF_ERROR(Get(ph, "dr_loads", p.dr_loads));
      RETURN_IF_ERROR(Get(ph, "kernel_insns", insns));
      if (!insns.is_null()) {
        if (!insns.is_number_unsigned()) {
          return absl::InvalidArgumentError("field 'kernel_insns' has the wrong type");
        }
        p.kernel_insns = insns.get<uint64_t>();
      }
      // Results written before KVM's exits were reported have neither.
      if (ph.contains("kvm_exits")) RETURN_IF_ERROR(GetOptional(ph, "kvm_exits", p.kvm_exits));
      if (ph.contains("kvm_exits_by_reason")) {
        RETURN_IF_ERROR(Get(ph, "kvm_exits_by_reason", p.kvm_exits_by_reason));
      }
      RETURN_IF_ERROR(GetOptional(ph, "wall_ns", p.wall_ns));
      RETURN_IF_ERROR(GetOptional(ph, "tsc_cycles", p.tsc_cycles));
      if (ph.contains("clocks_agree")) {
        RETURN_IF_ERROR(GetOptional(ph, "clocks_agree", p.clocks_agree));
      }
      // A document from before time_status floored a time the calibration swallowed
      // at 0 (a measured time is never 0): that is no time.
      if (!ph.contains("time_status") &&
          (p.wall_ns == uint64_t{0} || p.tsc_cycles == uint64_t{0})) {
        p.wall_ns.reset();
        p.tsc_cycles.reset();
      }
      // A run on several vCPUs: each one's part (absent on one vCPU).
      if (auto vcpus = ph.find("vcpus"); vcpus != ph.end()) {
        if (!vcpus->is_array()) return absl::InvalidArgumentError("field 'vcpus' is not a list");
        for (const nlohmann::json& v : *vcpus) {
          VcpuPhaseSample vcpu;
          RETURN_IF_ERROR(Get(v, "vcpu", vcpu.vcpu));
          RETURN_IF_ERROR(Get(v, "exits", vcpu.exits));
          // Results written before sigvisor read the guest's IPI count have none.
          if (v.contains("ipis")) RETURN_IF_ERROR(GetOptional(v, "ipis", vcpu.ipis));
          RETURN_IF_ERROR(GetOptional(v, "interrupts", vcpu.interrupts));
          p.vcpus.push_back(vcpu);
        }
      }
      run.phases.push_back(std::move(p));
    }
    result.runs.push_back(std::move(run));
  }
  return result;
}

namespace {

std::string Listed(const std::vector<std::string>& items) {
  return "[" + absl::StrJoin(items, ", ") + "]";
}

std::string Listed(const std::vector<VariantInfo>& variants) {
  std::vector<std::string> names;
  for (const VariantInfo& v : variants) names.push_back(v.name);
  return Listed(names);
}

// The first field in which two matrices differ, with both values ("" when equal):
// what a refused merge names.
std::optional<std::pair<std::string, std::pair<std::string, std::string>>> MatrixDifference(
    const Matrix& a, const Matrix& b) {
  auto differ = [](std::string field, std::string x, std::string y) {
    return std::make_optional(
        std::make_pair(std::move(field), std::make_pair(std::move(x), std::move(y))));
  };
  if (a.workloads != b.workloads)
    return differ("matrix.workloads", Listed(a.workloads), Listed(b.workloads));
  if (a.variants.size() != b.variants.size()) {
    return differ("matrix.variants", Listed(a.variants), Listed(b.variants));
  }
  for (size_t i = 0; i < a.variants.size(); ++i) {
    const VariantInfo &x = a.variants[i], &y = b.variants[i];
    const std::string at = absl::StrFormat("matrix.variants[%d]", i);
    if (x.name != y.name) return differ(at + ".name", x.name, y.name);
    if (x.settings != y.settings) return differ(at + ".settings", x.settings, y.settings);
    if (x.text_bytes != y.text_bytes) {
      return differ(at + ".text_bytes", absl::StrCat(x.text_bytes), absl::StrCat(y.text_bytes));
    }
    if (x.image_fnv1a64 != y.image_fnv1a64) {
      return differ(at + ".image_fnv1a64 (another build of " + x.name + ")", x.image_fnv1a64,
                    y.image_fnv1a64);
    }
  }
  if (a.traps != b.traps) {
    return differ("matrix.traps", Listed(TrapNames(a.traps)), Listed(TrapNames(b.traps)));
  }
  if (a.repetitions != b.repetitions) {
    return differ("matrix.repetitions", absl::StrCat(a.repetitions), absl::StrCat(b.repetitions));
  }
  if (a.ops != b.ops) return differ("matrix.ops", absl::StrCat(a.ops), absl::StrCat(b.ops));
  if (a.warmup != b.warmup) {
    return differ("matrix.warmup", absl::StrCat(a.warmup), absl::StrCat(b.warmup));
  }
  if (a.memory_mib != b.memory_mib) {
    return differ("matrix.memory_mib", absl::StrCat(a.memory_mib), absl::StrCat(b.memory_mib));
  }
  if (a.restored != b.restored) {
    return differ("matrix.restored", a.restored ? "true" : "false", b.restored ? "true" : "false");
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<BenchResult> MergeResults(const std::vector<BenchResult>& parts,
                                         const std::vector<std::string>& names) {
  if (parts.empty()) return absl::InvalidArgumentError("nothing to merge");
  auto name = [&](size_t i) {
    return i < names.size() ? absl::StrCat("'", names[i], "'")
                            : absl::StrFormat("result %d", i + 1);
  };
  // "FIELD: X in 'a.json', Y in 'b.json'": the first part sets what the others must match.
  auto refuse = [&](size_t i, const std::string& field, const std::string& first,
                    const std::string& other) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s and %s are not shards of one bench: %s is %s in %s and %s in %s",
                        name(0), name(i), field, first, name(0), other, name(i)));
  };
  BenchResult merged;
  merged.matrix = parts[0].matrix;
  merged.host = parts[0].host;
  merged.shard_count = parts[0].shard_count;
  std::set<uint32_t> shards;
  std::map<uint32_t, size_t> shard_from;  // which part holds each shard
  std::map<size_t, size_t> run_from;      // which part holds each run
  for (size_t i = 0; i < parts.size(); ++i) {
    const BenchResult& part = parts[i];
    if (auto difference = MatrixDifference(merged.matrix, part.matrix)) {
      return refuse(i, difference->first, difference->second.first, difference->second.second);
    }
    if (part.host.kind != merged.host.kind) {
      return refuse(i, "host.kind", merged.host.kind, part.host.kind);
    }
    if (part.host.cpl0_emulated != merged.host.cpl0_emulated) {
      return refuse(i, "host.cpl0_emulated", merged.host.cpl0_emulated ? "true" : "false",
                    part.host.cpl0_emulated ? "true" : "false");
    }
    if (part.shard_count != merged.shard_count) {
      return refuse(i, "shards.count", absl::StrCat(merged.shard_count),
                    absl::StrCat(part.shard_count));
    }
    for (uint32_t s : part.shards) {
      if (auto [at, fresh] = shard_from.emplace(s, i); !fresh) {
        return absl::InvalidArgumentError(
            absl::StrFormat("shard %d/%d is in both %s and %s (shards.included)", s,
                            merged.shard_count, name(at->second), name(i)));
      }
      shards.insert(s);
    }
    for (const RunSample& run : part.runs) {
      if (auto [at, fresh] = run_from.emplace(run.spec.index, i); !fresh) {
        return absl::InvalidArgumentError(
            absl::StrFormat("run %d is in both %s and %s (runs[].index)", run.spec.index,
                            name(at->second), name(i)));
      }
      merged.runs.push_back(run);
    }
    merged.interrupted = merged.interrupted || part.interrupted;
    for (const std::string& w : part.warnings) merged.warnings.push_back(w);
  }
  std::sort(merged.runs.begin(), merged.runs.end(),
            [](const RunSample& a, const RunSample& b) { return a.spec.index < b.spec.index; });
  merged.shards.assign(shards.begin(), shards.end());
  // A merge stands for the whole matrix: a missing shard's runs are missing runs.
  merged.runs_expected = merged.matrix.runs();
  if (merged.shards.size() < merged.shard_count) {
    std::vector<std::string> missing;
    for (uint32_t s = 1; s <= merged.shard_count; ++s) {
      if (!shards.count(s)) missing.push_back(absl::StrFormat("%d/%d", s, merged.shard_count));
    }
    merged.warnings.push_back("missing shards: " + absl::StrJoin(missing, ", "));
  }
  return merged;
}

}  // namespace sigvisor::bench
