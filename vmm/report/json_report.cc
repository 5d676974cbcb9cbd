#include "vmm/report/json_report.h"

#include "absl/strings/str_format.h"

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

// The run's traps: the mechanism, counts by kind, and one row per site and kind.
json TrapsToJson(const TrapSummary& trap, const TrapLedger& ledger) {
  json by_site = json::array();
  for (const auto& [key, row] : ledger.by_site()) {
    by_site.push_back(
        {{"address", Hex(key.first)}, {"site", row.site}, {"kind", row.kind}, {"count", row.count}});
  }
  auto kind = [&](const char* name) {
    auto it = ledger.by_kind().find(name);
    return it == ledger.by_kind().end() ? uint64_t{0} : it->second;
  };
  return {{"mechanism", trap.mechanism},
          {"reason", trap.reason},
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

json PhaseToJson(const PhaseResult& phase, const HostSummary& host) {
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
  json overhead = nullptr;
  if (phase.marker_overhead) {
    overhead = {{"exits", Sum(phase.marker_overhead->exits)},
                {"traps", phase.marker_overhead->traps.total()},
                {"kvm_stats", KvmStatsToJson(phase.marker_overhead->kvm_stats)},
                {"wall_ns", phase.marker_overhead->wall_ns},
                {"tsc_cycles", phase.marker_overhead->tsc_cycles}};
    if (phase.calibration_noise) {
      overhead["samples"] = phase.calibration_noise->samples;
      overhead["wall_ns_noise"] = phase.calibration_noise->wall_ns;
      overhead["tsc_cycles_noise"] = phase.calibration_noise->tsc_cycles;
    }
  }
  return {{"name", phase.name},
          {"ops", phase.ops},
          {"exits", {{"total", phase.exits_total}, {"by_reason", by_reason}}},
          {"traps",
           {{"total", phase.traps.total()},
            {"by_kind", CountsToJson(phase.traps.by_kind)},
            {"by_site", CountsToJson(phase.traps.by_site)},
            {"dr_loads", phase.traps.dr_loads},
            {"hypercalls", phase.traps.hypercalls}}},
          {"kvm_stats", KvmStatsToJson(phase.kvm_stats)},
          {"wall_ns", Optional(phase.MeasuredWallNs())},
          {"tsc_cycles", Optional(phase.MeasuredTscCycles())},
          {"time_status", PhaseTimeName(phase.time)},
          {"clocks_agree", phase.clocks_agree ? json(*phase.clocks_agree) : json(nullptr)},
          {"per_op", per_op},
          {"marker_overhead", overhead}};
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

}  // namespace

nlohmann::ordered_json RunRecordToJson(const RunRecord& record) {
  const RunResult& result = record.result;
  json by_reason = json::object();
  for (const auto& [reason, stats] : result.ledger.by_reason()) {
    by_reason[reason] = LatencyToJson(stats);
  }
  json by_detail = json::array();
  for (const auto& [key, stats] : result.ledger.by_detail()) {
    json row = LatencyToJson(stats);
    row["reason"] = key.first;
    row["detail"] = key.second;
    by_detail.push_back(row);
  }
  json phases = json::array();
  for (const PhaseResult& phase : result.phases) phases.push_back(PhaseToJson(phase, record.host));
  return {
      {"schema", kRunSchema},
      {"image", record.image},
      {"variant", record.variant.empty()
                      ? json(nullptr)
                      : json({{"name", record.variant}, {"settings", record.variant_settings}})},
      {"cmdline", record.cmdline},
      {"outcome", OutcomeName(result.outcome)},
      {"exit_code", result.exit_code},
      {"diagnosis", result.diagnosis.empty() ? json(nullptr) : json(result.diagnosis)},
      {"host", {{"kind", record.host.kind}, {"cpl0_emulated", record.host.cpl0_emulated}}},
      {"trap_mechanism", record.trap.mechanism},
      {"exits",
       {{"total", result.ledger.total()}, {"by_reason", by_reason}, {"by_detail", by_detail}}},
      {"traps", TrapsToJson(record.trap, result.traps)},
      {"kvm_stats", KvmStatsToJson(result.kvm_stats)},
      {"phases", phases},
      {"timing",
       {{"vm_create_ns", record.vm_create_ns},
        {"setup_ns", record.setup_ns},
        {"boot_ns", result.first_hypercall_ns},
        {"boot_kvm_stats", KvmStatsToJson(result.boot_kvm_stats)},
        {"run_ns", result.run_ns}}},
      {"wall_ns", record.wall_ns},
      {"console", result.console},
      {"console_truncated", result.console_truncated},
      {"console_bytes", result.console_bytes},
      {"console_dropped_bytes", result.console_dropped_bytes},
      {"complete", result.complete()},
      {"sandbox", result.sandbox},
      {"warnings_dropped", result.warnings_dropped},
      {"warnings", result.warnings},
      {"injections", InjectionsToJson(record.injections)},
      {"inject_seed", record.injections.empty() ? json(nullptr) : json(record.inject_seed)},
  };
}

}  // namespace sigvisor
