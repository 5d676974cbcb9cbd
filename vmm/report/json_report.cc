#include "vmm/report/json_report.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "vmm/report/kvm_exits.h"
#include "vmm/report/kvm_stat_check.h"
#include "vmm/report/phase_spread.h"

namespace sigvisor {
namespace {

using json = nlohmann::ordered_json;

json LatencyToJson(const LatencyStats& stats) {
  return {{"count", stats.count},
          {"sum_ns", stats.sum_ns},
          {"mean_ns", stats.mean_ns()},
          {"min_ns", stats.min_or_zero_ns()},
          {"max_ns", stats.max_ns}};
}

// The reported statistics first (when present), then any other that moved.
json KvmStatsToJson(const StatsSnapshot& stats) {
  json out = json::object();
  for (const char* name : kReportedKvmStats) {
    if (auto it = stats.find(name); it != stats.end()) out[name] = it->second;
  }
  for (const auto& [name, value] : stats) {
    if (value != 0 && !out.contains(name)) out[name] = value;
  }
  return out;
}

double PerOp(uint64_t total, uint64_t ops) {
  return ops ? static_cast<double>(total) / static_cast<double>(ops) : 0.0;
}

json CountsToJson(const ExitCounts& counts) {
  json out = json::object();
  for (const auto& [name, count] : counts) out[name] = count;
  return out;
}

std::string Hex(uint64_t value) { return absl::StrFormat("%#x", value); }

// What every part of the document needs to know about the run as a whole.
struct RunContext {
  const RunRecord& record;
  // KVM statistics this host does not keep (kvm_stat_check.h): left out everywhere.
  std::vector<UncountedKvmStat> uncounted;
};

// The stats members of one object: `kvm_stats` (null for the MIPS interpreter, whose
// counters go to `interpreter_stats` instead); `prefix` is "" or "boot_".
void AddStats(json& object, const std::string& prefix, const StatsSnapshot& stats,
              const RunContext& run) {
  if (run.record.stats_source == StatsSource::kMipsInterpreter) {
    object[prefix + "kvm_stats"] = nullptr;
    object[prefix + "interpreter_stats"] = KvmStatsToJson(stats);
  } else {
    object[prefix + "kvm_stats"] = KvmStatsToJson(WithoutUncounted(stats, run.uncounted));
  }
}

// One by_site row, the same at run and phase level: the site's address, its
// symbol+offset, the kind it trapped as and the count.
json SiteRow(uint64_t address, const std::string& site, const json& kind, uint64_t count) {
  return {{"address", Hex(address)}, {"site", site}, {"kind", kind}, {"count", count}};
}

// A phase's by_site rows. The phase's tally counts by symbol+offset; the run's ledger
// gives each site's address and kind. A wrmsr site that trapped as both
// segment_load and msr_write in the run has one phase row with kind null (the count
// covers both).
json PhaseSitesToJson(const TrapCounts& by_site, const TrapLedger& run_traps) {
  json rows = json::array();
  for (const auto& [site, count] : by_site) {
    std::optional<uint64_t> address;
    json kind = nullptr;
    int kinds = 0;
    for (const auto& [key, row] : run_traps.by_site()) {
      if (row.site != site) continue;
      address = key.first;
      kind = row.kind;
      ++kinds;
    }
    if (kinds > 1) kind = nullptr;
    rows.push_back(SiteRow(address.value_or(0), site, kind, count));
  }
  return rows;
}

// The run's traps: the mechanism, counts by kind, and one row per site and kind.
json TrapsToJson(const TrapSummary& trap, const TrapLedger& ledger) {
  json by_site = json::array();
  for (const auto& [key, row] : ledger.by_site()) {
    by_site.push_back(SiteRow(key.first, row.site, row.kind, row.count));
  }
  auto kind = [&](const char* name) {
    auto it = ledger.by_kind().find(name);
    return it == ledger.by_kind().end() ? uint64_t{0} : it->second;
  };
  return {
      {"mechanism", TrapMechanismName(trap.mechanism)},
      // Why this mechanism; there is nothing to explain when nothing is trapped.
      {"reason", trap.mechanism == TrapMechanism::kOff || trap.reason.empty() ? json(nullptr)
                                                                              : json(trap.reason)},
      {"sites", trap.sites},
      {"total", ledger.total()},
      {"by_kind", CountsToJson(ledger.by_kind())},
      {"dr_writes", kind("dr_write")},
      {"dr_reads", kind("dr_read")},
      {"dr_loads", ledger.dr_loads()},
      {"hypercalls", ledger.hypercalls()},  // --trap=pv: the guest's load requests
      {"by_site", by_site}};
}

json Optional(const std::optional<uint64_t>& value) { return value ? json(*value) : json(nullptr); }

json SignalFramesToJson(const SignalFrameCounts& counts) {
  json declined = json::object();
  for (const auto& [reason, n] : counts.declined) declined[reason] = n;
  json doc = {{"written", counts.frames_written},
              {"restored", counts.sigreturns_restored},
              {"declined", declined},
              {"checked", counts.checking}};
  if (counts.checking) {
    doc["frames_compared"] = counts.frames_compared;
    doc["sigreturns_compared"] = counts.sigreturns_compared;
    doc["mismatches"] = counts.mismatches;
    doc["mismatches_dropped"] = counts.mismatches_dropped;
  }
  return doc;
}

// KVM's own exits in a phase (kvm_exits.h), beside the VMM's: `kvm_exits` {total,
// by_reason} and, for `per_op`, the same per op. Null where there are none to give:
// the MIPS interpreter, a host whose KVM gives no statistics.
struct KvmExitsJson {
  json totals = nullptr;
  json per_op = nullptr;
  json per_op_by_reason = nullptr;
};
KvmExitsJson KvmExitsToJson(const StatsSnapshot& stats, uint64_t ops, const RunContext& run) {
  KvmExitsJson out;
  if (run.record.stats_source != StatsSource::kKvm) return out;
  const std::optional<KvmExits> exits = KvmExitsOf(WithoutUncounted(stats, run.uncounted));
  if (!exits) return out;
  json by_reason = json::object(), per_op_by_reason = json::object();
  for (const auto& [name, count] : exits->by_reason) {
    by_reason[name] = count;
    per_op_by_reason[name] = PerOp(count, ops);
  }
  out.totals = {{"total", Optional(exits->total)}, {"by_reason", by_reason}};
  out.per_op = exits->total ? json(PerOp(*exits->total, ops)) : json(nullptr);
  out.per_op_by_reason = per_op_by_reason;
  return out;
}

// One vCPU's part of a phase on several vCPUs: the VMM's exits of it, KVM's statistics
// of it, and per op what a signal to another CPU is read by (docs/json.md, "Several
// vCPUs"): the interrupts KVM injected into it (the IPIs it received: the bundled
// kernel takes no other interrupt) and its halts; and an SMP kernel's own count of the
// IPIs it sent and those sent to it (`ipis`, null when the guest does not count them).
json VcpuPhaseToJson(int vcpu, const ExitCounts& exits, const StatsSnapshot& stats, uint64_t ops,
                     const GuestIpis* ipis, const RunContext& run) {
  const uint64_t total = Sum(exits);
  const StatsSnapshot counted = WithoutUncounted(stats, run.uncounted);
  auto stat_per_op = [&](const char* name) {
    auto it = counted.find(name);
    return it == counted.end() ? json(nullptr) : json(PerOp(it->second, ops));
  };
  json out = {{"vcpu", vcpu}, {"exits", {{"total", total}, {"by_reason", CountsToJson(exits)}}}};
  AddStats(out, "", stats, run);
  const KvmExitsJson kvm_exits = KvmExitsToJson(stats, ops, run);
  out["kvm_exits"] = kvm_exits.totals;
  json per_op = {{"exits", PerOp(total, ops)}, {"kvm_exits", kvm_exits.per_op}};
  for (const VcpuPhaseStat& stat : kVcpuPhaseStats) {
    per_op[stat.json_name] = stat_per_op(stat.kvm_name);
  }
  if (ipis != nullptr) {
    out["guest_ipis"] = {{"sent", ipis->sent}, {"received", ipis->received}};
    per_op["ipis_sent"] = PerOp(ipis->sent, ops);
    per_op["ipis_received"] = PerOp(ipis->received, ops);
  }
  out["per_op"] = per_op;
  return out;
}

// The phase's exit-handling times by reason (phase_tracker.h): count, mean and the
// log2 buckets that hold any, each with its bounds.
json ExitLatencyToJson(const std::map<std::string, LatencyHistogram, std::less<>>& latency) {
  json out = json::object();
  for (const auto& [reason, histogram] : latency) {
    json buckets = json::array();
    for (size_t b = 0; b < kLatencyBuckets; ++b) {
      if (histogram.buckets[b] == 0) continue;
      buckets.push_back({{"low_ns", LatencyBucketLow(b)},
                         {"high_ns", LatencyBucketHigh(b)},
                         {"count", histogram.buckets[b]}});
    }
    out[reason] = {
        {"count", histogram.count}, {"mean_ns", histogram.mean_ns()}, {"buckets", buckets}};
  }
  return out;
}

json PhaseToJson(const PhaseResult& phase, const RunContext& run) {
  const HostSummary& host = run.record.host;
  json by_reason = CountsToJson(phase.exits);
  // A time the marker calibration swallowed is no figure: null, and the run's
  // warnings say why.
  auto time_per_op = [&](const std::optional<uint64_t>& total) {
    return total ? json(PerOp(*total, phase.ops)) : json(nullptr);
  };
  json per_op = {
      {"exits", PerOp(phase.exits_total, phase.ops)},
      {"traps", PerOp(phase.traps.total(), phase.ops)},
      {"dr_loads", PerOp(phase.traps.dr_loads, phase.ops)},
      {"tsc_cycles", time_per_op(phase.MeasuredTscCycles())},
      {"ns", time_per_op(phase.MeasuredWallNs())},
  };
  // insn_emulation counts guest CPL0 instructions exactly only where CPL0 is emulated.
  auto insns = phase.kvm_stats.find("insn_emulation");
  per_op["kernel_insns"] = host.cpl0_emulated && insns != phase.kvm_stats.end()
                               ? json(PerOp(insns->second, phase.ops))
                               : json(nullptr);
  const KvmExitsJson kvm_exits = KvmExitsToJson(phase.kvm_stats, phase.ops, run);
  per_op["kvm_exits"] = kvm_exits.per_op;
  per_op["kvm_exits_by_reason"] = kvm_exits.per_op_by_reason;
  json overhead = nullptr;
  if (phase.marker_overhead) {
    overhead = {{"exits", Sum(phase.marker_overhead->exits)},
                {"traps", phase.marker_overhead->traps.total()}};
    AddStats(overhead, "", phase.marker_overhead->kvm_stats, run);
    overhead["wall_ns"] = phase.marker_overhead->wall_ns;
    overhead["tsc_cycles"] = phase.marker_overhead->tsc_cycles;
    if (phase.calibration_noise) {
      overhead["samples"] = phase.calibration_noise->samples;
      overhead["wall_ns_noise"] = phase.calibration_noise->wall_ns;
      overhead["tsc_cycles_noise"] = phase.calibration_noise->tsc_cycles;
    }
  }
  json traps = {{"total", phase.traps.total()},
                {"by_kind", CountsToJson(phase.traps.by_kind)},
                {"by_site", PhaseSitesToJson(phase.traps.by_site, run.record.result.traps)},
                {"dr_loads", phase.traps.dr_loads},
                {"hypercalls", phase.traps.hypercalls}};
  json out = {{"name", phase.name},
              {"ops", phase.ops},
              {"exits", {{"total", phase.exits_total}, {"by_reason", by_reason}}},
              {"kvm_exits", kvm_exits.totals},
              {"traps", traps}};
  AddStats(out, "", phase.kvm_stats, run);
  out["wall_ns"] = Optional(phase.MeasuredWallNs());
  out["tsc_cycles"] = Optional(phase.MeasuredTscCycles());
  out["time_status"] = PhaseTimeName(phase.time);
  out["clocks_agree"] = phase.clocks_agree ? json(*phase.clocks_agree) : json(nullptr);
  out["per_op"] = per_op;
  out["marker_overhead"] = overhead;
  out["exit_latency"] = ExitLatencyToJson(phase.exit_latency);
  if (!phase.other_vcpus.empty()) {
    json vcpus = json::array();
    vcpus.push_back(
        VcpuPhaseToJson(0, phase.exits, phase.kvm_stats, phase.ops, phase.guest_ipis_of(0), run));
    for (const VcpuSample& other : phase.other_vcpus) {
      vcpus.push_back(VcpuPhaseToJson(other.vcpu, other.exits, other.kvm_stats, phase.ops,
                                      phase.guest_ipis_of(other.vcpu), run));
    }
    out["vcpus"] = vcpus;
  }
  return out;
}

json SampleSpreadToJson(const std::optional<SampleSpread>& spread) {
  if (!spread) return nullptr;
  return {{"min", spread->min},
          {"median", spread->median},
          {"max", spread->max},
          {"samples", spread->samples}};
}

// The phases repeated under one name (phase_spread.h): per op, each figure's smallest,
// median and largest sample.
json PhaseSpreadsToJson(const std::vector<PhaseSpread>& spreads) {
  json out = json::array();
  for (const PhaseSpread& spread : spreads) {
    out.push_back({{"name", spread.name},
                   {"samples", spread.samples},
                   {"ops", spread.ops},
                   {"per_op",
                    {{"exits", SampleSpreadToJson(spread.exits)},
                     {"kernel_insns", SampleSpreadToJson(spread.kernel_insns)},
                     {"tsc_cycles", SampleSpreadToJson(spread.tsc_cycles)},
                     {"ns", SampleSpreadToJson(spread.ns)}}}});
  }
  return out;
}

// One object per injection (docs/inject.md): what, when, where, and what came of it.
json InjectionsToJson(const std::vector<InjectionRecord>& injections) {
  json out = json::array();
  for (const InjectionRecord& r : injections) {
    out.push_back({
        {"sequence", r.sequence},
        {"spec", r.spec},
        {"action", r.action},
        {"phase", r.phase.empty() ? json(nullptr) : json(r.phase)},
        {"op", r.op},
        {"exit_index", r.exit_index},
        {"rip", absl::StrFormat("%#x", r.rip)},
        {"symbol", r.symbol.empty() ? json(nullptr) : json(r.symbol)},
        {"cpl", r.cpl},
        {"address", r.address ? json(absl::StrFormat("%#x", r.address)) : json(nullptr)},
        {"outcome", InjectionOutcomeName(r.outcome)},
        {"signal", r.signal},
        {"si_addr", r.si_addr ? json(absl::StrFormat("%#x", r.si_addr)) : json(nullptr)},
        {"detail", r.detail},
    });
  }
  return out;
}

// A ledger's exits: total, by reason and by detail, each with the VMM's handling time.
json ExitsToJson(const ExitLedger& ledger) {
  json by_reason = json::object();
  for (const auto& [reason, stats] : ledger.by_reason()) by_reason[reason] = LatencyToJson(stats);
  json by_detail = json::array();
  for (const auto& [key, stats] : ledger.by_detail()) {
    json row = LatencyToJson(stats);
    row["reason"] = key.first;
    row["detail"] = key.second;
    by_detail.push_back(row);
  }
  return {{"total", ledger.total()}, {"by_reason", by_reason}, {"by_detail", by_detail}};
}

}  // namespace

nlohmann::ordered_json RunRecordToJson(const RunRecord& record) {
  const RunResult& result = record.result;
  const RunContext run{record, record.stats_source == StatsSource::kKvm
                                   ? UncountedKvmStats(result)
                                   : std::vector<UncountedKvmStat>()};
  json phases = json::array();
  for (const PhaseResult& phase : result.phases) phases.push_back(PhaseToJson(phase, run));
  json left_out = json::array();
  for (const UncountedKvmStat& stat : run.uncounted) {
    left_out.push_back(
        {{"name", stat.name},
         {"kvm", stat.kvm},
         {"vmm", stat.vmm},
         {"exit_reason", stat.exit_reason.empty() ? json(nullptr) : json(stat.exit_reason)},
         {"why", DescribeUncounted(stat)}});
  }
  // A guest that never makes a hypercall (a Multiboot kernel) has no boot time, and a
  // restored one none of its own.
  const bool booted = record.guest_makes_hypercalls && record.restored_from.empty() &&
                      result.first_hypercall_ns != 0;
  json timing = {{"vm_create_ns", record.vm_create_ns},
                 {"setup_ns", record.setup_ns},
                 {"boot_ns", booted ? json(result.first_hypercall_ns) : json(nullptr)}};
  if (booted) {
    AddStats(timing, "boot_", result.boot_kvm_stats, run);
  } else {
    timing["boot_kvm_stats"] = nullptr;
  }
  timing["run_ns"] = result.run_ns;
  json guest_memory = nullptr;
  if (record.guest_memory) {
    guest_memory = {{"mapped_bytes", record.guest_memory->mapped_bytes},
                    {"resident_bytes", record.guest_memory->resident_bytes},
                    {"private_bytes", record.guest_memory->private_bytes},
                    {"shared_bytes", record.guest_memory->shared_bytes()}};
  }
  const bool interpreter = record.stats_source == StatsSource::kMipsInterpreter;
  json doc = {
      {"schema", kRunSchema},
      {"image", record.image},
      {"variant", record.variant.empty()
                      ? json(nullptr)
                      : json({{"name", record.variant}, {"settings", record.variant_settings}})},
      {"cmdline", record.cmdline},
      {"restored_from", record.restored_from.empty() ? json(nullptr) : json(record.restored_from)},
      {"outcome", OutcomeName(result.outcome)},
      {"exit_code", result.exit_code},
      {"diagnosis", result.diagnosis.empty() ? json(nullptr) : json(result.diagnosis)},
      {"host",
       {{"kind", record.host.kind},
        {"cpl0_emulated", interpreter ? json(nullptr) : json(record.host.cpl0_emulated)}}},
      {"trap_mechanism", TrapMechanismName(record.trap.mechanism)},
      {"phase_interrupts", record.phase_interrupts_blocked ? "blocked" : "allowed"},
      {"exits", ExitsToJson(result.ledger)},
      {"traps", TrapsToJson(record.trap, result.traps)},
  };
  AddStats(doc, "", result.kvm_stats, run);
  if (!result.other_vcpus.empty()) {  // several vCPUs: the above are vCPU 0's
    doc["ipi"] = record.ipi.empty() ? json(nullptr) : json(record.ipi);
    doc["lapic"] = record.lapic.empty() ? json(nullptr) : json(record.lapic);
    doc["ipis_delivered_by_vmm"] = record.ipis_delivered_by_vmm;
    json others = json::array();
    for (const VcpuRun& vcpu : result.other_vcpus) {
      json one = {{"vcpu", vcpu.vcpu}, {"exits", ExitsToJson(vcpu.ledger)}};
      AddStats(one, "", vcpu.kvm_stats, run);
      one["ipis_delivered_by_vmm"] = vcpu.ipis_delivered_by_vmm;
      others.push_back(one);
    }
    doc["other_vcpus"] = others;
  }
  doc["kvm_stats_left_out"] = left_out;
  doc["phases"] = phases;
  // Only where a name repeats: a run without samples reports as it always did.
  if (const std::vector<PhaseSpread> spreads =
          SpreadOfRepeatedPhases(result.phases, record.host.cpl0_emulated && !interpreter);
      !spreads.empty()) {
    doc["phase_spread"] = PhaseSpreadsToJson(spreads);
  }
  if (record.signal_frames) doc["signal_frames"] = SignalFramesToJson(*record.signal_frames);
  doc["timing"] = timing;
  doc["guest_memory"] = guest_memory;
  doc["wall_ns"] = record.wall_ns;
  doc["console"] = result.console;
  doc["console_truncated"] = result.console_truncated;
  doc["console_bytes"] = result.console_bytes;
  doc["console_dropped_bytes"] = result.console_dropped_bytes;
  doc["complete"] = result.complete();
  doc["sandbox"] = result.sandbox;
  doc["warnings_dropped"] = result.warnings_dropped;
  doc["warnings"] = result.warnings;
  doc["injections"] = InjectionsToJson(record.injections);
  doc["inject_seed"] = record.injections.empty() ? json(nullptr) : json(record.inject_seed);
  return doc;
}

}  // namespace sigvisor
