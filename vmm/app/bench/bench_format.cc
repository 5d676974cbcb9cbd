#include "vmm/app/bench/bench_format.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/report/csv.h"
#include "vmm/report/kvm_exits.h"
#include "vmm/report/svg_chart.h"

namespace sigvisor::bench {
namespace {

std::string Plural(size_t n, const char* word) {
  return absl::StrFormat("%d %s%s", n, word, n == 1 ? "" : "s");
}

// The cell of the first variant with the same workload, phase and trap: what ratios
// are relative to.
const Cell* Reference(const std::vector<Cell>& cells, const Cell& cell) {
  for (const Cell& other : cells) {
    if (other.workload == cell.workload && other.phase == cell.phase && other.trap == cell.trap &&
        other.variant == 0) {
      return &other;
    }
  }
  return nullptr;
}

double Ratio(const std::vector<Cell>& cells, const Cell& cell) {
  const Cell* ref = Reference(cells, cell);
  if (ref == nullptr || ref->ns.n == 0 || cell.ns.n == 0 || ref->ns.median == 0) return NAN;
  return cell.ns.median / ref->ns.median;
}

std::string Count(double v) {
  if (v == std::floor(v)) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.2f", v);
}

// The most vCPUs any variant of the matrix runs on: the CSV's per-vCPU columns.
int MaxVcpus(const Matrix& m) {
  int most = 1;
  for (const VariantInfo& v : m.variants) most = std::max(most, v.vcpus);
  return most;
}

}  // namespace

std::string FormatVcpusLine(const Cell& cell) {
  std::vector<std::string> parts;
  for (const VcpuPerOp& v : cell.vcpus) {
    // The guest's own IPI count where it keeps one: exact, where interrupts can exceed
    // it by re-injections.
    const std::string ipis = v.ipis ? absl::StrFormat("%s IPIs, ", Count(*v.ipis)) : "";
    parts.push_back(absl::StrFormat("vCPU %d %s exits, %s%s interrupts", v.vcpu, Count(v.exits),
                                    ipis, v.interrupts ? Count(*v.interrupts) : "-"));
  }
  return absl::StrFormat("per op, by vCPU: %s", absl::StrJoin(parts, "; "));
}

std::vector<std::string> TimeNotes(const Cell& cell) {
  std::vector<std::string> notes;
  const size_t runs = cell.samples.size();
  if (cell.times_unmeasured > 0) {
    notes.push_back(absl::StrFormat(
        "time not measured in %d of %d run%s (below the marker calibration's noise)%s",
        cell.times_unmeasured, runs, runs == 1 ? "" : "s",
        cell.times_unmeasured == runs ? "" : "; the time is over the others"));
  }
  if (cell.clocks_disagree > 0) {
    notes.push_back(
        absl::StrFormat("ns and tsc_cycles disagree beyond the TSC rate in %d of %d "
                        "run%s",
                        cell.clocks_disagree, runs, runs == 1 ? "" : "s"));
  }
  return notes;
}

ChartBar TimeBar(std::string label, const Cell& cell, const Summary* reference,
                 std::string_view counts) {
  ChartBar bar;
  bar.label = std::move(label);
  if (cell.samples.empty()) {
    bar.annotation = "no completed run";
    return bar;
  }
  std::vector<std::string> notes = TimeNotes(cell);
  if (cell.ns.n == 0) {
    // No bar: a time of 0 would read as free.
    bar.annotation = absl::StrFormat("%s%s", absl::StrJoin(notes, "; "), counts);
    return bar;
  }
  bar.value = cell.ns.median / 1e3;
  bar.low = cell.ns.min / 1e3;
  bar.high = cell.ns.max / 1e3;
  const bool is_reference = reference == &cell.ns;
  if (reference != nullptr && reference->n > 0 && reference->median > 0) {
    bar.on_bar = absl::StrFormat("%.3fx", cell.ns.median / reference->median);
  } else if (!is_reference) {
    notes.push_back("no ratio: the first bar's time is not measured");
  }
  bar.annotation = absl::StrFormat("%s per op%s%s", FormatNs(cell.ns.median), counts,
                                   notes.empty() ? "" : "; " + absl::StrJoin(notes, "; "));
  return bar;
}

std::string FormatNs(double ns) {
  if (std::isnan(ns)) return "-";
  if (ns >= 1e9) return absl::StrFormat("%.3f s", ns / 1e9);
  if (ns >= 1e6) return absl::StrFormat("%.3f ms", ns / 1e6);
  if (ns >= 1e3) return absl::StrFormat("%.1f us", ns / 1e3);
  return absl::StrFormat("%.0f ns", ns);
}

std::string DescribeMatrix(const Matrix& m) {
  return absl::StrFormat(
      "%s x %s x %s x %s = %s of %d ops%s", Plural(m.workloads.size(), "workload"),
      Plural(m.variants.size(), "variant"), Plural(m.traps.size(), "trap mechanism"),
      Plural(m.repetitions, "repetition"), Plural(m.runs(), "run"), m.ops,
      m.warmup == launch::kDefaultWarmupOps ? "" : absl::StrFormat(" after %d warm-up", m.warmup));
}

std::string CompletenessLine(const BenchResult& result) {
  std::string shards;
  if (result.shard_count > 1) {
    std::vector<std::string> names;
    for (uint32_t s : result.shards) names.push_back(absl::StrFormat("%d", s));
    shards = absl::StrFormat(" (shard%s %s of %d)", result.shards.size() == 1 ? "" : "s",
                             absl::StrJoin(names, ","), result.shard_count);
  }
  if (result.complete()) {
    return absl::StrFormat("complete: %d of %d runs measured%s", result.runs_ok(),
                           result.runs_expected, shards);
  }
  std::vector<std::string> why;
  if (result.runs_failed()) {
    why.push_back(
        absl::StrFormat("%d failed; the phases that ended normally before a failure are kept",
                        result.runs_failed()));
  }
  if (result.interrupted) why.push_back("interrupted");
  if (result.shards.size() < result.shard_count) {
    why.push_back(absl::StrFormat("%d of %d shards", result.shards.size(), result.shard_count));
  }
  return absl::StrFormat("INCOMPLETE: %d of %d runs measured%s%s", result.runs_ok(),
                         result.runs_expected, shards,
                         why.empty() ? "" : " (" + absl::StrJoin(why, ", ") + ")");
}

std::string FormatBenchText(const BenchResult& result) {
  const Matrix& m = result.matrix;
  std::string out = absl::StrFormat(
      "sigvisor bench: %s (%s host%s)\n%s\n", DescribeMatrix(m), result.host.kind,
      result.host.cpl0_emulated ? ", guest CPL0 emulated" : "", CompletenessLine(result));
  if (std::find(m.traps.begin(), m.traps.end(), TrapMechanism::kPv) != m.traps.end()) {
    // A pv row is the build's debugreg=pv counterpart (vmm/app/bench/kvm_target.h).
    out +=
        "trap pv boots each variant's debugreg=pv build: its kernel counts its own DR "
        "writes in the VMM's page; swapgs runs natively\n";
  }
  const std::vector<Cell> cells = Cells(result);
  std::string current;
  bool kvm_exits_missing = false;
  for (const Cell& cell : cells) {
    const std::string heading =
        absl::StrFormat("%s, phase %s", m.workloads[cell.workload], cell.phase);
    if (heading != current) {
      current = heading;
      absl::StrAppendFormat(&out,
                            "\n%s: per op (%d ops per run); time: median [min - max] over runs\n"
                            "  %-27s %-6s %5s %12s %6s %12s %6s %7s %7s %8s %11s  %-23s %6s\n",
                            heading, cell.ops, "variant", "trap", "runs", "kernel_insns", "exits",
                            "kvm exits/op", "traps", "dr_write", "seg_load", "dr_loads", "time/op",
                            "[min - max]", "ratio");
    }
    const std::string name = m.variants[cell.variant].name;
    if (cell.samples.empty()) {
      absl::StrAppendFormat(&out, "  %-27s %-6s %5d  (no completed run)\n", name,
                            TrapMechanismName(m.traps[cell.trap]), 0);
      continue;
    }
    const PerOpCounts& c = cell.per_op;
    const double ratio = Ratio(cells, cell);
    const bool timed = cell.ns.n > 0;
    const bool kvm_exits = cell.kvm_exits.n > 0;
    kvm_exits_missing = kvm_exits_missing || !kvm_exits;
    absl::StrAppendFormat(
        &out, "  %-27s %-6s %5d %12s %6s %12s %6s %7s %7s %8s %11s  %-23s %6s%s\n", name,
        TrapMechanismName(m.traps[cell.trap]), cell.samples.size(),
        c.kernel_insns ? Count(*c.kernel_insns) : "-", Count(c.exits),
        kvm_exits ? Count(cell.kvm_exits.median) : "-", Count(c.traps),
        Count(c.traps_by_kind.at("dr_write")), Count(c.traps_by_kind.at("segment_load")),
        Count(c.dr_loads), timed ? FormatNs(cell.ns.median) : "unmeasured",
        timed ? absl::StrFormat("[%s - %s]", FormatNs(cell.ns.min), FormatNs(cell.ns.max)) : "",
        std::isnan(ratio) ? "-" : absl::StrFormat("%.3f", ratio),
        cell.counts_agree ? "" : "  COUNTS DIFFER");
    // A variant of several vCPUs: each one's exits (the VMM's), the IPIs the guest
    // counted sent to it and its interrupts (KVM's irq_injections: the IPIs it received,
    // plus re-injections), on a line of its own.
    if (!cell.vcpus.empty()) absl::StrAppendFormat(&out, "      %s\n", FormatVcpusLine(cell));
    for (const std::string& mismatch : cell.mismatches) {
      absl::StrAppendFormat(&out, "      counts differ across repetitions: %s\n", mismatch);
    }
    for (const std::string& note : TimeNotes(cell)) absl::StrAppendFormat(&out, "      %s\n", note);
  }
  // Said once, rather than a 0 that would read as none.
  if (kvm_exits_missing) {
    out +=
        "\nkvm exits/op is - where the runs have no KVM exits: the host's KVM gave no "
        "statistics (no KVM_GET_STATS_FD), or the results were written before sigvisor "
        "reported them\n";
  }
  if (!result.warnings.empty()) {
    out += "\nwarnings:\n";
    for (const std::string& w : result.warnings) absl::StrAppendFormat(&out, "  %s\n", w);
  }
  if (!result.complete()) absl::StrAppendFormat(&out, "\n%s\n", CompletenessLine(result));
  return out;
}

std::string FormatBenchCsv(const BenchResult& result) {
  const Matrix& m = result.matrix;
  std::vector<std::string> header = {"workload",
                                     "phase",
                                     "variant",
                                     "settings",
                                     "trap",
                                     "ops",
                                     "samples",
                                     "counts_agree",
                                     "exits_per_op",
                                     "traps_per_op",
                                     "dr_write_per_op",
                                     "dr_read_per_op",
                                     "segment_load_per_op",
                                     "msr_write_per_op",
                                     "dr_loads_per_op",
                                     "kernel_insns_per_op",
                                     "ns_per_op_median",
                                     "ns_per_op_min",
                                     "ns_per_op_max",
                                     "ns_per_op_mean",
                                     "ns_per_op_stddev",
                                     "tsc_cycles_per_op_median",
                                     "tsc_cycles_per_op_min",
                                     "tsc_cycles_per_op_max",
                                     "ratio_to_first_variant",
                                     "times_unmeasured",
                                     "clocks_disagree"};
  // KVM's own exits per op (median over the runs; empty where the runs have none) and
  // by reason, one column per statistic of vmm/report/kvm_exits.h: after the columns
  // above, so that theirs keep their places.
  header.push_back("kvm_exits_per_op");
  for (const KvmExitStat& stat : kKvmExitReasons) {
    header.push_back(absl::StrFormat("kvm_%s_per_op", stat.name));
  }
  // times_unmeasured and clocks_disagree are there for every cell; the figures before
  // them only for a cell with a run.
  const size_t figures_end = header.size() - 3 - std::size(kKvmExitReasons);
  // A matrix with a variant of several vCPUs: per vCPU its exits, the IPIs the guest
  // counted sent to it and its interrupts per op (medians), last, so that every other
  // column keeps its place; empty for a vCPU the cell's variant does not have, and the
  // IPIs where the guest does not count them.
  const int vcpu_columns = MaxVcpus(m) > 1 ? MaxVcpus(m) : 0;
  for (int i = 0; i < vcpu_columns; ++i) {
    header.push_back(absl::StrFormat("vcpu%d_exits_per_op", i));
    header.push_back(absl::StrFormat("vcpu%d_ipis_per_op", i));
    header.push_back(absl::StrFormat("vcpu%d_interrupts_per_op", i));
  }
  CsvWriter csv(header);
  const std::vector<Cell> cells = Cells(result);
  for (const Cell& cell : cells) {
    const VariantInfo& v = m.variants[cell.variant];
    std::vector<std::string> row = {m.workloads[cell.workload],
                                    cell.phase,
                                    v.name,
                                    v.settings,
                                    std::string(TrapMechanismName(m.traps[cell.trap])),
                                    absl::StrFormat("%d", cell.ops),
                                    absl::StrFormat("%d", cell.samples.size()),
                                    cell.counts_agree ? "true" : "false"};
    if (!cell.samples.empty()) {
      const PerOpCounts& c = cell.per_op;
      for (double value :
           {c.exits, c.traps, c.traps_by_kind.at("dr_write"), c.traps_by_kind.at("dr_read"),
            c.traps_by_kind.at("segment_load"), c.traps_by_kind.at("msr_write"), c.dr_loads}) {
        row.push_back(CsvWriter::Number(value));
      }
      row.push_back(c.kernel_insns ? CsvWriter::Number(*c.kernel_insns) : "");
      // No time measured: empty fields, as for no run.
      for (double value : {cell.ns.median, cell.ns.min, cell.ns.max, cell.ns.mean, cell.ns.stddev,
                           cell.tsc.median, cell.tsc.min, cell.tsc.max}) {
        row.push_back(cell.ns.n > 0 ? CsvWriter::Number(value, 1) : "");
      }
      row.push_back(CsvWriter::Number(Ratio(cells, cell), 4));
    }
    row.resize(figures_end);
    row.push_back(absl::StrFormat("%d", cell.times_unmeasured));
    row.push_back(absl::StrFormat("%d", cell.clocks_disagree));
    const bool kvm_exits = cell.kvm_exits.n > 0;
    row.push_back(kvm_exits ? CsvWriter::Number(cell.kvm_exits.median) : "");
    for (const KvmExitStat& stat : kKvmExitReasons) {
      auto it = cell.kvm_exits_by_reason.find(stat.name);
      row.push_back(!kvm_exits                             ? ""
                    : it == cell.kvm_exits_by_reason.end() ? "0"
                                                           : CsvWriter::Number(it->second));
    }
    for (int i = 0; i < vcpu_columns; ++i) {
      auto v = std::find_if(cell.vcpus.begin(), cell.vcpus.end(),
                            [i](const VcpuPerOp& x) { return x.vcpu == i; });
      row.push_back(v == cell.vcpus.end() ? "" : CsvWriter::Number(v->exits));
      row.push_back(v == cell.vcpus.end() || !v->ipis ? "" : CsvWriter::Number(*v->ipis));
      row.push_back(v == cell.vcpus.end() || !v->interrupts ? ""
                                                            : CsvWriter::Number(*v->interrupts));
    }
    csv.AddRow(std::move(row));
  }
  return csv.str();
}

std::string FormatBenchSvg(const BenchResult& result) {
  const Matrix& m = result.matrix;
  const std::vector<Cell> cells = Cells(result);
  std::vector<ChartSection> sections;
  for (const Cell& cell : cells) {
    const std::string heading =
        absl::StrFormat("%s, phase %s", m.workloads[cell.workload], cell.phase);
    if (sections.empty() || sections.back().heading != heading) {
      sections.push_back({heading, absl::StrFormat("%d ops per run", cell.ops), {}});
    }
    const std::string title = absl::StrFormat("trap %s", TrapMechanismName(m.traps[cell.trap]));
    ChartSection& section = sections.back();
    if (section.panels.empty() || section.panels.back().title != title) {
      section.panels.push_back({title,
                                "us per op: median over runs, whiskers min - max; on the bar: time "
                                "/ the first variant's",
                                {}});
    }
    const Cell* reference = Reference(cells, cell);
    section.panels.back().bars.push_back(
        TimeBar(m.variants[cell.variant].name, cell, reference ? &reference->ns : nullptr,
                cell.per_op.kernel_insns
                    ? absl::StrFormat(", %s kernel insns", Count(*cell.per_op.kernel_insns))
                    : ""));
  }
  return RenderBarChartSvg(absl::StrFormat("sigvisor bench: %s%s", DescribeMatrix(m),
                                           result.complete() ? "" : " (INCOMPLETE)"),
                           sections);
}

}  // namespace sigvisor::bench
