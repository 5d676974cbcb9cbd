// The side-by-side comparison's pairs (peer_format.cc): one figure of sigvisor and of
// one peer, paired by repetition, and the phases a workload's runs reported. Private
// to the bench library.
#ifndef SIGVISOR_VMM_APP_BENCH_PEER_PAIRING_H_
#define SIGVISOR_VMM_APP_BENCH_PEER_PAIRING_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vmm/app/bench/peer.h"
#include "vmm/app/bench/stats.h"

namespace sigvisor::bench {

// Values of one figure of sigvisor and of one peer, paired by repetition (the two
// runs made next to each other), for one workload.
struct Pairing {
  std::vector<double> sigvisor, peer;  // by repetition, both present
  PairedComparison difference;         // of sigvisor[i] - peer[i]
};

using SigvisorMetric = std::function<std::optional<double>(size_t run)>;
using PeerMetric = std::function<std::optional<double>(const PeerRun&)>;

Pairing PairRuns(const SideBySideResult& result, const PeerResult& peer, size_t workload,
                 const SigvisorMetric& sigvisor_metric, const PeerMetric& peer_metric);

// The guest's own cycles per op of `key` ("<workload>/<phase>") in a sigvisor run.
SigvisorMetric SigvisorCycles(const SideBySideResult& result, const std::string& key);
PeerMetric PeerCycles(const std::string& key);
// A run's wall time, or with `cpu` its CPU time.
SigvisorMetric SigvisorCost(const SideBySideResult& result, bool cpu);
PeerMetric PeerCost(bool cpu);

// The phases a workload's runs reported (sigvisor's and the peers' timing lines), in
// the order sigvisor's cells list them, then any others by name.
std::vector<std::string> PhaseKeys(const SideBySideResult& result, size_t workload);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_PEER_PAIRING_H_
