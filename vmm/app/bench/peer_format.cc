// The side-by-side bench's output: the table (text) and the "peers" member of the
// sigvisor.bench/1 document.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "vmm/app/bench/peer.h"
#include "vmm/app/bench/peer_pairing.h"
#include "vmm/app/bench/results.h"
#include "vmm/app/bench/stats.h"

namespace sigvisor::bench {
namespace {

double Median(std::vector<double> values) { return Summarize(values).median; }

std::string Num(double v, int decimals) { return absl::StrFormat("%.*f", decimals, v); }

std::string Signed(double v, int decimals) { return absl::StrFormat("%+.*f", decimals, v); }

// "-12.3 us (-1.2%) [-30.1, +5.2] 96% CI; sigvisor above in 3 of 9 pairs, below in 6; sign
// test p = 0.51". `scale` turns the values into the unit shown.
std::string DescribePairing(const Pairing& pairing, double scale, const std::string& unit,
                            int decimals) {
  const PairedComparison& d = pairing.difference;
  if (d.pairs == 0) return "no pairs";
  const double peer_median = Summarize(pairing.peer).median;
  std::string out = absl::StrFormat("%s %s", Signed(d.median * scale, decimals), unit);
  if (peer_median != 0) absl::StrAppendFormat(&out, " (%+.1f%%)", 100 * d.median / peer_median);
  if (d.has_interval) {
    absl::StrAppendFormat(&out, " [%s, %s] %.1f%% interval", Signed(d.low * scale, decimals),
                          Signed(d.high * scale, decimals), 100 * d.coverage);
  } else {
    out += " [no 95% interval from fewer than 6 pairs]";
  }
  absl::StrAppendFormat(&out, "; sigvisor higher in %d of %d pairs, lower in %d; sign test p = %.3g",
                        d.above, d.pairs, d.below, d.sign_p);
  return out;
}

nlohmann::ordered_json PairingToJson(const Pairing& pairing) {
  const PairedComparison& d = pairing.difference;
  nlohmann::ordered_json interval = nullptr;
  if (d.has_interval) interval = {{"low", d.low}, {"high", d.high}, {"coverage", d.coverage}};
  return {{"pairs", d.pairs},
          {"sigvisor_median", Summarize(pairing.sigvisor).median},
          {"peer_median", Summarize(pairing.peer).median},
          {"difference_median", d.median},
          {"difference_interval", interval},
          {"sigvisor_higher", d.above},
          {"sigvisor_lower", d.below},
          {"sign_test_p", d.sign_p}};
}

std::string TargetName(const SideBySideResult& result, size_t target) {
  return target == 0 ? "sigvisor" : result.peers[target - 1].kind.name;
}

}  // namespace

std::string FormatPeerTable(const SideBySideResult& result, uint64_t tsc_khz) {
  const BenchResult& sigvisor = result.sigvisor;
  const Matrix& m = sigvisor.matrix;
  const std::vector<PeerResult>& peers = result.peers;
  std::vector<Cell> cells = Cells(sigvisor);
  std::string out = absl::StrFormat(
      "side by side: the bundled kernel (%s), %d ops per phase after %d warm-up, %d "
      "repetition%s, medians; the runs interleaved (sigvisor first in repetitions 1, 3, ..., "
      "last in 2, 4, ...); time per op from the guest's own timing line (TSC, %s)\n",
      m.variants.empty() ? "?" : m.variants[0].name, m.ops, m.warmup, m.repetitions,
      m.repetitions == 1 ? "" : "s",
      tsc_khz ? absl::StrFormat("%.4f GHz", tsc_khz / 1e6) : "rate unknown: cycles only");
  std::vector<std::string> columns = {"sigvisor"};
  for (const PeerResult& p : peers) columns.push_back(p.kind.name);
  auto row = [&](const std::string& workload, const std::string& phase, const std::string& metric,
                 const std::vector<std::string>& values) {
    std::string line = absl::StrFormat("%-12s %-12s %-22s", workload, phase, metric);
    for (const std::string& v : values) absl::StrAppendFormat(&line, " %14s", v);
    return line + "\n";
  };
  // The median of a figure over a target's ok runs of a workload.
  auto sigvisor_median = [&](size_t workload, const SigvisorMetric& metric) {
    std::vector<double> v;
    for (size_t i = 0; i < sigvisor.runs.size(); ++i) {
      const RunSample& r = sigvisor.runs[i];
      if (r.spec.workload != workload || !r.ok()) continue;
      if (std::optional<double> x = metric(i)) v.push_back(*x);
    }
    return v.empty() ? std::optional<double>() : Median(v);
  };
  auto peer_median = [&](const PeerResult& p, size_t workload, const PeerMetric& metric) {
    std::vector<double> v;
    for (const PeerRun& r : p.runs) {
      if (r.workload != m.workloads[workload] || !r.ok) continue;
      if (std::optional<double> x = metric(r)) v.push_back(*x);
    }
    return v.empty() ? std::optional<double>() : Median(v);
  };
  auto any_ok = [&](const PeerResult& p, size_t workload) {
    for (const PeerRun& r : p.runs) {
      if (r.workload == m.workloads[workload] && r.ok) return true;
    }
    return false;
  };
  auto sigvisor_any_ok = [&](size_t workload) {
    for (const RunSample& r : sigvisor.runs) {
      if (r.spec.workload == workload && r.ok()) return true;
    }
    return false;
  };
  // A row of one figure: sigvisor's median, then each peer's.
  auto figure_row = [&](size_t workload, const std::string& label, const std::string& phase,
                        const std::string& metric,
                        const SigvisorMetric& sv, const PeerMetric& peer, double scale,
                        int decimals) {
    std::vector<std::string> values;
    const std::optional<double> mine = sigvisor_median(workload, sv);
    values.push_back(mine ? Num(*mine * scale, decimals)
                          : sigvisor_any_ok(workload) ? "-" : "failed");
    for (const PeerResult& p : peers) {
      const std::optional<double> theirs = p.skipped ? std::nullopt
                                                     : peer_median(p, workload, peer);
      values.push_back(theirs      ? Num(*theirs * scale, decimals)
                       : p.skipped ? "skipped"
                       : any_ok(p, workload) ? "-" : "failed");
    }
    return row(label, phase, metric, values);
  };
  out += row("workload", "phase", "metric", columns);
  const double us_per_cycle = tsc_khz ? 1e3 / static_cast<double>(tsc_khz) : 0;
  std::string paired;
  for (size_t w = 0; w < m.workloads.size(); ++w) {
    const std::string& workload = m.workloads[w];
    // The whole run: sigvisor's VM from creation to teardown, QEMU's whole process.
    out += figure_row(w, workload, "-", "total run ms", SigvisorCost(result, false),
                      PeerCost(false), 1e-6, 2);
    for (const std::string& key : PhaseKeys(result, w)) {
      const std::string phase = key.substr(key.find('/') + 1);
      out += figure_row(w, "", phase, "tsc cycles per op", SigvisorCycles(result, key),
                        PeerCycles(key), 1, 0);
      if (tsc_khz) {
        out += figure_row(w, "", "", "us per op", SigvisorCycles(result, key), PeerCycles(key),
                          us_per_cycle, 2);
      }
      const Cell* cell = nullptr;
      for (const Cell& c : cells) {
        if (c.workload == w && c.variant == 0 && c.trap == 0 && c.phase == phase) cell = &c;
      }
      const bool sv_ok = cell != nullptr && !cell->samples.empty();
      std::vector<std::string> exits = {sv_ok ? Num(cell->per_op.exits, 2) : "-"};
      std::vector<std::string> traps = {sv_ok ? Num(cell->per_op.traps, 2) : "-"};
      std::vector<std::string> insns = {
          sv_ok && cell->per_op.kernel_insns ? Num(*cell->per_op.kernel_insns, 1) : "-"};
      for (size_t i = 0; i < peers.size(); ++i) {
        exits.push_back("n/a");
        traps.push_back("n/a");
        insns.push_back("n/a");
      }
      out += row("", "", "exits per op", exits);
      out += row("", "", "traps per op", traps);
      out += row("", "", "kernel insns per op", insns);
      for (const PeerResult& p : peers) {
        if (p.skipped) continue;
        const Pairing pairing = PairRuns(result, p, w, SigvisorCycles(result, key), PeerCycles(key));
        paired += absl::StrFormat(
            "  %s %s, %s per op: %s\n", workload, phase, p.kind.name,
            tsc_khz ? DescribePairing(pairing, us_per_cycle, "us", 2)
                    : DescribePairing(pairing, 1, "cycles", 0));
      }
    }
    // What the whole run took of a CPU, after its phases (their rows come first).
    out += figure_row(w, "", "-", "run CPU ms", SigvisorCost(result, true), PeerCost(true), 1e-6,
                      2);
    out += figure_row(
        w, "", "", "run CPU / wall %",
        [&](size_t run) -> std::optional<double> {
          const RunCost& c = result.sigvisor_costs[run];
          if (c.wall_ns == 0) return std::nullopt;
          return 100.0 * static_cast<double>(c.cpu_ns) / static_cast<double>(c.wall_ns);
        },
        [](const PeerRun& r) -> std::optional<double> {
          if (r.wall_ns == 0) return std::nullopt;
          return 100.0 * static_cast<double>(r.cpu_ns) / static_cast<double>(r.wall_ns);
        },
        1, 1);
    for (const PeerResult& p : peers) {
      if (p.skipped) continue;
      const Pairing cpu = PairRuns(result, p, w, SigvisorCost(result, true), PeerCost(true));
      paired += absl::StrFormat("  %s run CPU, %s: %s\n", workload, p.kind.name,
                                DescribePairing(cpu, 1e-6, "ms", 2));
    }
  }
  if (!paired.empty()) {
    out += "sigvisor - peer, paired by repetition (median difference, its distribution-free "
           "interval, the sign test):\n" + paired;
  }
  for (const PeerResult& p : peers) {
    if (p.skipped) {
      out += absl::StrFormat("%s: skipped: %s\n", p.kind.name, p.skip_reason);
      continue;
    }
    for (const PeerRun& r : p.runs) {
      if (!r.ok) {
        out += absl::StrFormat("%s: %s run %d failed: %s\n", p.kind.name, r.workload,
                               r.repetition + 1, r.diagnosis);
      }
    }
  }
  out += "n/a: QEMU has no exit ledger. A run is sigvisor's VM from creation to teardown and "
         "QEMU's whole process (its firmware included); run CPU is the process's user + system "
         "time over it, so CPU / wall below 100% is time spent waiting for a CPU.\n";
  return out;
}

nlohmann::ordered_json PeersToJson(const SideBySideResult& result, uint64_t tsc_khz) {
  const Matrix& m = result.sigvisor.matrix;
  auto phases_json = [](const std::map<std::string, PeerPhase>& phases) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [key, phase] : phases) {
      list.push_back({{"name", key.substr(key.find('/') + 1)},
                      {"ops", phase.ops},
                      {"tsc_cycles_per_op", phase.tsc_cycles_per_op}});
    }
    return list;
  };
  nlohmann::ordered_json order = nlohmann::ordered_json::array();
  for (const SideBySideStep& step : result.order) {
    order.push_back({{"repetition", step.repetition},
                     {"workload", m.workloads[step.workload]},
                     {"target", TargetName(result, step.target)}});
  }
  nlohmann::ordered_json sigvisor_runs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < result.sigvisor.runs.size(); ++i) {
    const RunSample& r = result.sigvisor.runs[i];
    sigvisor_runs.push_back({{"workload", m.workloads[r.spec.workload]},
                             {"repetition", r.spec.repetition},
                             {"ok", r.ok()},
                             {"wall_ns", result.sigvisor_costs[i].wall_ns},
                             {"cpu_ns", result.sigvisor_costs[i].cpu_ns},
                             {"phases", phases_json(result.sigvisor_lines[i])}});
  }
  nlohmann::ordered_json targets = nlohmann::ordered_json::array();
  for (const PeerResult& p : result.peers) {
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    for (const PeerRun& r : p.runs) {
      runs.push_back({{"workload", r.workload},
                      {"repetition", r.repetition},
                      {"ok", r.ok},
                      {"exit_status", r.exit_status},
                      {"diagnosis", r.diagnosis},
                      {"wall_ns", r.wall_ns},
                      {"cpu_ns", r.cpu_ns},
                      {"phases", phases_json(r.phases)}});
    }
    nlohmann::ordered_json comparisons = nlohmann::ordered_json::array();
    for (size_t w = 0; w < m.workloads.size() && !p.skipped; ++w) {
      auto add = [&](const nlohmann::ordered_json& phase, const char* metric,
                     const Pairing& pairing) {
        nlohmann::ordered_json c = {
            {"workload", m.workloads[w]}, {"phase", phase}, {"metric", metric}};
        c.update(PairingToJson(pairing));
        comparisons.push_back(std::move(c));
      };
      for (const std::string& key : PhaseKeys(result, w)) {
        add(key.substr(key.find('/') + 1), "tsc_cycles_per_op",
            PairRuns(result, p, w, SigvisorCycles(result, key), PeerCycles(key)));
      }
      add(nullptr, "run_wall_ns",
          PairRuns(result, p, w, SigvisorCost(result, false), PeerCost(false)));
      add(nullptr, "run_cpu_ns", PairRuns(result, p, w, SigvisorCost(result, true), PeerCost(true)));
    }
    targets.push_back({{"name", p.kind.name},
                       {"binary", p.path.empty() ? p.kind.binary : p.path},
                       {"accel", p.kind.accel},
                       {"skipped", p.skipped},
                       {"skip_reason", p.skip_reason},
                       {"runs", runs},
                       {"comparisons", comparisons}});
  }
  return {{"tsc_khz", tsc_khz},
          {"order", order},
          {"sigvisor_runs", sigvisor_runs},
          {"targets", targets}};
}

}  // namespace sigvisor::bench
