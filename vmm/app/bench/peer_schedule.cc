// The side-by-side schedule: per repetition and workload, sigvisor's run and each
// peer's back to back, who goes first alternating, each sigvisor run's cost measured.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "vmm/app/bench/peer.h"

namespace sigvisor::bench {

std::vector<size_t> TargetOrder(uint32_t repetition, size_t peers) {
  std::vector<size_t> order(peers + 1);
  for (size_t i = 0; i <= peers; ++i) order[i] = i;
  if (repetition % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

SideBySideResult RunSideBySide(const Matrix& matrix, const SigvisorRunFunction& sigvisor,
                               std::vector<PeerResult> peers, const PeerRunFunction& peer,
                               const RunnerOptions& options, const CostClock& clock) {
  SideBySideResult result;
  result.peers = std::move(peers);
  auto run_peer = [&](size_t index, const RunSpec& spec) {
    PeerResult& p = result.peers[index];
    if (p.skipped) return;
    PeerAttempt attempt = peer(p, matrix.workloads[spec.workload], spec.repetition);
    if (!attempt.never_ran.empty() && p.runs.empty()) {
      p.skipped = true;
      p.skip_reason = attempt.never_ran;
      return;
    }
    result.order.push_back({spec.repetition, spec.workload, index + 1});
    p.runs.push_back(std::move(attempt.run));
  };
  // RunMatrix calls this once per sigvisor run, in schedule order (repetition, then
  // workload); the peers' runs of the same pair go before or after it.
  auto paired = [&](const RunSpec& spec) -> absl::StatusOr<RunSample> {
    absl::StatusOr<RunSample> sample = absl::UnknownError("not run");
    for (size_t target : TargetOrder(spec.repetition, result.peers.size())) {
      if (target > 0) {
        run_peer(target - 1, spec);
        continue;
      }
      std::string console;
      const RunCost before = clock();
      sample = sigvisor(spec, &console);
      const RunCost after = clock();
      result.sigvisor_costs.push_back(
          {after.wall_ns - before.wall_ns, after.cpu_ns - before.cpu_ns});
      result.sigvisor_lines.push_back(ParseTimingLines(console, matrix.workloads[spec.workload]));
      result.order.push_back({spec.repetition, spec.workload, 0});
    }
    return sample;
  };
  result.sigvisor = RunMatrix(matrix, paired, options);
  return result;
}

}  // namespace sigvisor::bench
