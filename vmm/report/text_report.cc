#include "vmm/report/text_report.h"

#include <algorithm>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"
#include "vmm/report/kvm_exits.h"
#include "vmm/report/kvm_stat_check.h"
#include "vmm/report/phase_spread.h"

namespace sigvisor {
namespace {

std::string Us(uint64_t ns) { return absl::StrFormat("%.1f", static_cast<double>(ns) / 1e3); }
std::string Ms(uint64_t ns) { return absl::StrFormat("%.2f ms", static_cast<double>(ns) / 1e6); }

double PerOp(uint64_t total, uint64_t ops) {
  return ops ? static_cast<double>(total) / static_cast<double>(ops) : 0.0;
}

void AppendExitTable(std::string& out, const ExitLedger& ledger,
                     std::string_view title = "exits by reason") {
  absl::StrAppendFormat(&out, "\n%-18s %10s %12s %12s\n", title, "count", "mean us", "max us");
  for (const auto& [reason, stats] : ledger.by_reason()) {
    absl::StrAppendFormat(&out, "  %-16s %10d %12s %12s\n", reason, stats.count,
                          Us(stats.mean_ns()), Us(stats.max_ns));
  }
  absl::StrAppendFormat(&out, "  %-16s %10d\n", "total", ledger.total());
  for (const auto& [key, stats] : ledger.by_detail()) {
    if (key.second.empty()) continue;
    absl::StrAppendFormat(&out, "    %-40s %8d\n", key.second, stats.count);
  }
}

void AppendTrapTable(std::string& out, const TrapSummary& trap, const TrapLedger& ledger) {
  if (trap.mechanism == TrapMechanism::kOff) return;
  absl::StrAppendFormat(&out, "\n%-30s %10s\n",
                        absl::StrFormat("traps (%s)", TrapMechanismName(trap.mechanism)), "count");
  for (const auto& [kind, count] : ledger.by_kind()) {
    absl::StrAppendFormat(&out, "  %-28s %10d\n", kind, count);
  }
  absl::StrAppendFormat(&out, "  %-28s %10d\n", "total", ledger.total());
  absl::StrAppendFormat(&out, "  %-28s %10d\n", "debug-register loads", ledger.dr_loads());
  if (trap.mechanism == TrapMechanism::kPv) {
    absl::StrAppendFormat(&out, "  %-28s %10d\n", "load hypercalls", ledger.hypercalls());
  }
  for (const auto& [key, row] : ledger.by_site()) {
    absl::StrAppendFormat(&out, "    %-28s %-12s %8d\n", row.site, row.kind, row.count);
  }
}

void AppendKvmStats(std::string& out, const StatsSnapshot& stats, bool interpreter,
                    const std::vector<UncountedKvmStat>& uncounted, bool ran) {
  if (stats.empty()) {
    // Said once here, rather than as zeros in every phase.
    if (!interpreter && ran)
      absl::StrAppendFormat(&out, "\nKVM stats: none: %s\n", kNoKvmStatistics);
    return;
  }
  out += interpreter ? "\ninterpreter stats (whole run):" : "\nKVM stats (whole run):";
  int shown = 0;
  for (const char* name : interpreter ? std::span<const char* const>(kReportedInterpreterStats)
                                      : std::span<const char* const>(kReportedKvmStats)) {
    auto it = stats.find(name);
    if (it == stats.end()) continue;
    if (std::any_of(uncounted.begin(), uncounted.end(),
                    [&](const UncountedKvmStat& u) { return u.name == name; })) {
      continue;
    }
    absl::StrAppendFormat(&out, "%s %s %d", shown++ % 4 == 0 ? "\n " : ",", name, it->second);
  }
  out += "\n";
  for (const UncountedKvmStat& stat : uncounted) {
    absl::StrAppendFormat(&out, "  not shown: %s\n", DescribeUncounted(stat));
  }
}

// A phase on several vCPUs: per op, a column per vCPU (vCPU 0's being the phase's rows
// above) of what a signal to another CPU is read by: the exits that reached the VMM,
// KVM's own exits, the interrupts KVM injected (the IPIs received) and the halts.
void AppendVcpus(std::string& out, const PhaseResult& phase,
                 const std::vector<UncountedKvmStat>& uncounted) {
  struct Column {
    int vcpu;
    const ExitCounts* exits;
    StatsSnapshot stats;
  };
  std::vector<Column> columns = {{0, &phase.exits, WithoutUncounted(phase.kvm_stats, uncounted)}};
  for (const VcpuSample& other : phase.other_vcpus) {
    columns.push_back({other.vcpu, &other.exits, WithoutUncounted(other.kvm_stats, uncounted)});
  }
  absl::StrAppendFormat(&out, "  %-30s", "per op, by vCPU");
  for (const Column& column : columns)
    absl::StrAppendFormat(&out, " %9s", absl::StrFormat("vcpu%d", column.vcpu));
  out += "\n";
  auto cell = [&](std::optional<uint64_t> total) {
    return total ? absl::StrFormat(" %9.2f", PerOp(*total, phase.ops))
                 : absl::StrFormat(" %9s", "-");
  };
  auto stat = [](const StatsSnapshot& stats, const char* name) -> std::optional<uint64_t> {
    auto it = stats.find(name);
    if (it == stats.end()) return std::nullopt;
    return it->second;
  };
  auto line = [&](const char* name, auto value_of) {
    absl::StrAppendFormat(&out, "    %-28s", name);
    for (const Column& column : columns) out += cell(value_of(column));
    out += "\n";
  };
  line("exits", [](const Column& c) -> std::optional<uint64_t> { return Sum(*c.exits); });
  line("kvm_exits", [](const Column& c) -> std::optional<uint64_t> {
    std::optional<KvmExits> kvm = KvmExitsOf(c.stats);
    return kvm ? kvm->total : std::nullopt;
  });
  for (const VcpuPhaseStat& kvm : kVcpuPhaseStats) {
    line(kvm.text_label, [&](const Column& c) { return stat(c.stats, kvm.kvm_name); });
  }
  // An SMP kernel's own count: the IPIs its rule sent, by and to each CPU, exactly.
  if (phase.guest_ipis.empty()) return;
  line("IPIs sent, guest's count", [&](const Column& c) -> std::optional<uint64_t> {
    const GuestIpis* ipis = phase.guest_ipis_of(c.vcpu);
    return ipis ? std::optional<uint64_t>(ipis->sent) : std::nullopt;
  });
  line("IPIs received, guest's count", [&](const Column& c) -> std::optional<uint64_t> {
    const GuestIpis* ipis = phase.guest_ipis_of(c.vcpu);
    return ipis ? std::optional<uint64_t>(ipis->received) : std::nullopt;
  });
}

// "512ns", "8.2us", "1.3ms": a histogram bucket's bound, short.
std::string ShortNs(uint64_t ns) {
  if (ns < 1000) return absl::StrFormat("%dns", ns);
  if (ns < 1000000) return absl::StrFormat("%.1fus", static_cast<double>(ns) / 1e3);
  return absl::StrFormat("%.1fms", static_cast<double>(ns) / 1e6);
}

// The phase's exit-handling times by reason: count, mean, and each log2 bucket that
// holds any as "low-high:count" (the last bucket: "low+:count").
void AppendExitLatency(std::string& out, const PhaseResult& phase) {
  if (phase.exit_latency.empty()) return;
  absl::StrAppendFormat(&out, "  %-28s %8s %9s  %s\n", "exit handling, by reason", "count",
                        "mean us", "log2 buckets (count)");
  for (const auto& [reason, histogram] : phase.exit_latency) {
    std::string buckets;
    for (size_t b = 0; b < kLatencyBuckets; ++b) {
      if (histogram.buckets[b] == 0) continue;
      const std::string high =
          b + 1 < kLatencyBuckets ? "-" + ShortNs(LatencyBucketHigh(b)) : std::string("+");
      absl::StrAppendFormat(&buckets, " %s%s:%d", ShortNs(LatencyBucketLow(b)), high,
                            histogram.buckets[b]);
    }
    absl::StrAppendFormat(&out, "    %-26s %8d %9.1f %s\n", reason, histogram.count,
                          static_cast<double>(histogram.mean_ns()) / 1e3, buckets);
  }
}

// `kvm`: KVM's own exits in the phase (kvm_exits.h); nullopt for the MIPS interpreter
// and where the host gives no statistics (said once, under the KVM stats).
void AppendPhase(std::string& out, const PhaseResult& phase, const HostSummary& host, bool traps,
                 bool interpreter, const std::optional<KvmExits>& kvm) {
  absl::StrAppendFormat(&out, "\nphase %-24s %14s %14s\n",
                        absl::StrFormat("%s (%d ops)", phase.name, phase.ops), "total", "per op");
  auto row = [&](const char* name, uint64_t total) {
    absl::StrAppendFormat(&out, "  %-28s %14d %14.2f\n", name, total, PerOp(total, phase.ops));
  };
  row("exits", phase.exits_total);
  for (const auto& [reason, count] : phase.exits) {
    row(absl::StrFormat("  %s", reason).c_str(), count);
  }
  if (kvm) {  // beside the exits that reached the VMM, KVM's own
    if (kvm->total) {
      row("kvm_exits", *kvm->total);
    } else {
      absl::StrAppendFormat(&out, "  %-28s %s\n", "kvm_exits",
                            "not kept by this host's KVM (see \"not shown\" above)");
    }
    for (const auto& [name, count] : kvm->by_reason) {
      row(absl::StrFormat("  %s", name).c_str(), count);
    }
  }
  if (traps) {
    row("traps", phase.traps.total());
    for (const auto& [kind, count] : phase.traps.by_kind) {
      row(absl::StrFormat("  %s", kind).c_str(), count);
    }
    row("dr_loads", phase.traps.dr_loads);
    if (phase.traps.hypercalls != 0) row("  load hypercalls", phase.traps.hypercalls);
  }
  auto insns = phase.kvm_stats.find("insn_emulation");
  if (host.cpl0_emulated && insns != phase.kvm_stats.end()) row("kernel_insns", insns->second);
  if (interpreter) {  // the MIPS interpreter's counters
    for (const char* name : {"instructions", "exceptions", "icache_lines_flushed", "ipis_sent",
                             "modelled_cycles", "vdso_fetches", "vdso_writes"}) {
      if (auto it = phase.kvm_stats.find(name); it != phase.kvm_stats.end()) row(name, it->second);
    }
  }
  if (phase.time_measured()) {
    row("tsc_cycles", phase.tsc_cycles);
    row("ns", phase.wall_ns);
  } else {
    // As the JSON's null: no figure, and the warnings below give the numbers.
    for (const char* name : {"tsc_cycles", "ns"}) {
      absl::StrAppendFormat(&out, "  %-28s %s\n", name,
                            "not measured: below the marker calibration's noise");
    }
  }
  if (phase.clocks_agree == false) {
    absl::StrAppendFormat(&out, "  %-28s %s\n", "clocks",
                          "ns and tsc_cycles disagree beyond the TSC rate (see the warning)");
  }
}

// Phases repeated under one name: per op, the smallest, median and largest sample.
// The smallest is the operations' cost with the least interference (phase_spread.h).
void AppendSpread(std::string& out, const PhaseSpread& spread) {
  absl::StrAppendFormat(&out, "\nspread of phase %s (%d samples, %d ops)\n", spread.name,
                        spread.samples, spread.ops);
  absl::StrAppendFormat(&out, "  %-28s %14s %14s %14s\n", "per op", "min", "median", "max");
  auto row = [&](const char* name, const std::optional<SampleSpread>& values) {
    if (!values) {
      absl::StrAppendFormat(&out, "  %-28s %s\n", name, "not measured in any sample");
      return;
    }
    absl::StrAppendFormat(&out, "  %-28s %14.2f %14.2f %14.2f", name, values->min, values->median,
                          values->max);
    if (values->samples != spread.samples) {
      absl::StrAppendFormat(&out, "  (%d of %d samples)", values->samples, spread.samples);
    }
    out += "\n";
  };
  row("exits", spread.exits);
  if (spread.kernel_insns) row("kernel_insns", spread.kernel_insns);
  row("tsc_cycles", spread.tsc_cycles);
  row("ns", spread.ns);
}

// signal=pv: what the VMM did with the kernel's frame calls, or how its frames
// compared with the kernel's (--check-signal-frames).
std::string FormatSignalFrames(const SignalFrameCounts& counts) {
  std::string out;
  uint64_t declined = 0;
  for (const auto& [reason, n] : counts.declined) declined += n;
  if (counts.checking) {
    absl::StrAppendFormat(
        &out,
        "signal frames checked: %d frames and %d sigreturns computed by the VMM "
        "and compared with the kernel's own: %s\n",
        counts.frames_compared, counts.sigreturns_compared,
        counts.mismatches.empty()
            ? "all identical"
            : absl::StrFormat("%d differ", counts.mismatches.size() + counts.mismatches_dropped));
    for (const std::string& m : counts.mismatches) {
      absl::StrAppendFormat(&out, "  differs: %s\n", m);
    }
  } else {
    absl::StrAppendFormat(&out,
                          "signal frames (signal=pv): %d written and %d read back by the VMM\n",
                          counts.frames_written, counts.sigreturns_restored);
  }
  if (declined > 0) {
    absl::StrAppendFormat(&out, "  %d left to the kernel:", declined);
    const char* sep = " ";
    for (const auto& [reason, n] : counts.declined) {
      absl::StrAppendFormat(&out, "%s%s (%d)", sep, reason, n);
      sep = ", ";
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string FormatRunReport(const RunRecord& record) {
  const RunResult& result = record.result;
  const bool interpreter = record.stats_source == StatsSource::kMipsInterpreter;
  std::string out;
  absl::StrAppendFormat(&out, "sigvisor: %s %s", record.image, OutcomeName(result.outcome));
  if (result.outcome == Outcome::kExited) {
    absl::StrAppendFormat(&out, " with status %d", result.exit_code);
  }
  if (record.host.kind == "pvm" || record.host.kind == "hardware") {
    absl::StrAppendFormat(&out, " (host %s, guest CPL0 %s)\n", record.host.kind,
                          record.host.cpl0_emulated ? "emulated" : "native");
  } else {
    absl::StrAppendFormat(&out, " (host %s%s)\n", record.host.kind,  // the MIPS interpreter
                          record.host.detail.empty() ? "" : ", " + record.host.detail);
  }
  if (!result.diagnosis.empty()) absl::StrAppendFormat(&out, "  %s\n", result.diagnosis);
  absl::StrAppendFormat(&out, "  sandbox: %s\n", result.sandbox);
  absl::StrAppendFormat(&out, "  trap mechanism: %s", TrapMechanismName(record.trap.mechanism));
  if (record.trap.mechanism == TrapMechanism::kPv) {
    out += " (nothing patched: the kernel counts in the pv page)";
  } else if (record.trap.mechanism != TrapMechanism::kOff) {
    absl::StrAppendFormat(&out, " (%d sites)", record.trap.sites);
  }
  if (!record.trap.reason.empty()) absl::StrAppendFormat(&out, "; %s", record.trap.reason);
  out += "\n";
  if (record.phase_interrupts_blocked) {
    out += "  interrupts: none injected inside the measured phases (--block-phase-interrupts)\n";
  }
  if (!result.other_vcpus.empty()) {
    absl::StrAppendFormat(&out, "  vCPUs: %d", result.other_vcpus.size() + 1);
    if (!record.ipi.empty()) {
      absl::StrAppendFormat(&out, ", IPIs by %s (%d delivered by the VMM)", record.ipi,
                            record.ipis_delivered_by_vmm);
    }
    if (record.lapic == "vmm") {
      out += ", local APICs in the VMM (--lapic vmm)";
    }
    out += "; the exits and KVM stats below are vCPU 0's, each other vCPU's after them\n";
  }
  // A guest that makes no hypercall (a Multiboot kernel) has no boot span to show, and
  // a restored one no boot of its own.
  const bool restored = !record.restored_from.empty();
  const bool booted =
      record.guest_makes_hypercalls && !restored && result.first_hypercall_ns != 0;
  const std::string boot =
      booted ? absl::StrFormat("boot %s (to the first hypercall), ", Ms(result.first_hypercall_ns))
      : restored ? absl::StrFormat("restored from %s (no boot), ", record.restored_from)
                 : "";
  if (interpreter) {
    absl::StrAppendFormat(&out, "  set-up %s, %srun %s\n", Ms(record.setup_ns), boot,
                          Ms(result.run_ns));
  } else {
    absl::StrAppendFormat(&out, "  VM create %s, set-up %s, %srun %s\n", Ms(record.vm_create_ns),
                          Ms(record.setup_ns), boot, Ms(result.run_ns));
  }
  if (record.guest_memory) {
    const MemoryResidency& memory = *record.guest_memory;
    absl::StrAppendFormat(&out, "  guest memory: %d MiB, %d KiB resident",
                          memory.mapped_bytes >> 20, memory.resident_bytes >> 10);
    if (restored) {
      absl::StrAppendFormat(&out,
                            ": %d KiB written by this VM, %d KiB read from the snapshot (shared "
                            "with every restore of it)\n",
                            memory.private_bytes >> 10, memory.shared_bytes() >> 10);
    } else {
      out += "\n";
    }
  }
  if (auto boot = result.boot_kvm_stats.find("insn_emulation");
      booted && record.host.cpl0_emulated && boot != result.boot_kvm_stats.end()) {
    absl::StrAppendFormat(&out, "  boot: %d guest kernel instructions to the first hypercall\n",
                          boot->second);
  }
  AppendExitTable(out, result.ledger);
  for (const VcpuRun& vcpu : result.other_vcpus) {
    AppendExitTable(out, vcpu.ledger, absl::StrFormat("vCPU %d exits", vcpu.vcpu));
  }
  AppendTrapTable(out, record.trap, result.traps);
  const std::vector<UncountedKvmStat> uncounted =
      interpreter ? std::vector<UncountedKvmStat>() : UncountedKvmStats(result);
  AppendKvmStats(out, result.kvm_stats, interpreter, uncounted,
                 result.run_ns != 0 || !result.phases.empty());
  for (const PhaseResult& phase : result.phases) {
    AppendPhase(
        out, phase, record.host, record.trap.mechanism != TrapMechanism::kOff, interpreter,
        interpreter ? std::nullopt : KvmExitsOf(WithoutUncounted(phase.kvm_stats, uncounted)));
    if (!phase.other_vcpus.empty()) AppendVcpus(out, phase, uncounted);
    AppendExitLatency(out, phase);
  }
  for (const PhaseSpread& spread :
       SpreadOfRepeatedPhases(result.phases, record.host.cpl0_emulated && !interpreter)) {
    AppendSpread(out, spread);
  }
  if (!record.injections.empty()) {
    absl::StrAppendFormat(&out, "\ninjections (seed %d; docs/inject.md)\n", record.inject_seed);
    for (const InjectionRecord& r : record.injections) {
      absl::StrAppendFormat(&out, "  #%d %-12s %s", r.sequence, InjectionOutcomeName(r.outcome),
                            r.action.empty() ? r.spec : r.action);
      if (!r.phase.empty()) absl::StrAppendFormat(&out, " [%s op %d]", r.phase, r.op);
      if (r.rip) {
        absl::StrAppendFormat(&out, " at %#x%s", r.rip,
                              r.symbol.empty() ? "" : absl::StrCat(" ", r.symbol));
      }
      if (!r.detail.empty()) absl::StrAppendFormat(&out, ": %s", r.detail);
      out += "\n";
    }
  }
  if (record.signal_frames) out += FormatSignalFrames(*record.signal_frames);
  for (const std::string& warning : result.warnings) {
    absl::StrAppendFormat(&out, "warning: %s\n", warning);
  }
  if (result.console_truncated) out += "warning: console output was truncated in the report\n";
  if (result.warnings_dropped > 0) {
    absl::StrAppendFormat(&out, "warning: %d more warnings not shown\n", result.warnings_dropped);
  }
  if (!result.complete()) {
    absl::StrAppendFormat(&out,
                          "INCOMPLETE: the run ended with %s; the %d phase(s) above ended "
                          "before it\n",
                          OutcomeName(result.outcome), result.phases.size());
  }
  return out;
}

}  // namespace sigvisor
