#include "vmm/app/bench/peer_pairing.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "vmm/app/bench/results.h"

namespace sigvisor::bench {

Pairing PairRuns(const SideBySideResult& result, const PeerResult& peer, size_t workload,
                 const SigvisorMetric& sigvisor_metric, const PeerMetric& peer_metric) {
  const BenchResult& sv = result.sigvisor;
  std::map<uint32_t, double> by_repetition;
  for (size_t i = 0; i < sv.runs.size(); ++i) {
    const RunSample& r = sv.runs[i];
    if (r.spec.workload != workload || !r.ok()) continue;
    if (std::optional<double> v = sigvisor_metric(i)) by_repetition[r.spec.repetition] = *v;
  }
  Pairing pairing;
  std::vector<double> differences;
  for (const PeerRun& r : peer.runs) {
    if (r.workload != sv.matrix.workloads[workload] || !r.ok) continue;
    auto mine = by_repetition.find(r.repetition);
    std::optional<double> theirs = peer_metric(r);
    if (mine == by_repetition.end() || !theirs) continue;
    pairing.sigvisor.push_back(mine->second);
    pairing.peer.push_back(*theirs);
    differences.push_back(mine->second - *theirs);
  }
  pairing.difference = ComparePaired(differences);
  return pairing;
}

SigvisorMetric SigvisorCycles(const SideBySideResult& result, const std::string& key) {
  return [&result, key](size_t run) -> std::optional<double> {
    const auto& lines = result.sigvisor_lines[run];
    auto it = lines.find(key);
    if (it == lines.end()) return std::nullopt;
    return static_cast<double>(it->second.tsc_cycles_per_op);
  };
}
PeerMetric PeerCycles(const std::string& key) {
  return [key](const PeerRun& r) -> std::optional<double> {
    auto it = r.phases.find(key);
    if (it == r.phases.end()) return std::nullopt;
    return static_cast<double>(it->second.tsc_cycles_per_op);
  };
}
SigvisorMetric SigvisorCost(const SideBySideResult& result, bool cpu) {
  return [&result, cpu](size_t run) -> std::optional<double> {
    const RunCost& c = result.sigvisor_costs[run];
    return static_cast<double>(cpu ? c.cpu_ns : c.wall_ns);
  };
}
PeerMetric PeerCost(bool cpu) {
  return [cpu](const PeerRun& r) -> std::optional<double> {
    return static_cast<double>(cpu ? r.cpu_ns : r.wall_ns);
  };
}

std::vector<std::string> PhaseKeys(const SideBySideResult& result, size_t workload) {
  const std::string& name = result.sigvisor.matrix.workloads[workload];
  std::vector<std::string> keys;
  auto add = [&](const std::string& key) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  };
  for (const Cell& cell : Cells(result.sigvisor)) {
    if (cell.workload == workload) add(absl::StrCat(name, "/", cell.phase));
  }
  for (const auto& lines : result.sigvisor_lines) {
    for (const auto& [key, phase] : lines) {
      if (key.starts_with(name + "/")) add(key);
    }
  }
  for (const PeerResult& p : result.peers) {
    for (const PeerRun& r : p.runs) {
      if (r.workload != name) continue;
      for (const auto& [key, phase] : r.phases) add(key);
    }
  }
  return keys;
}

}  // namespace sigvisor::bench
