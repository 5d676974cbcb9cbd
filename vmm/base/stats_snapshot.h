// One reading of a backend's own counters, by name: KVM's binary statistics
// (vmm/kvm/stats_fd.h) or the MIPS interpreter's. Here, not in vmm/kvm, so that the
// run loop's Backend seam and the ledgers need no KVM wrapper to name them.
#ifndef SIGVISOR_VMM_BASE_STATS_SNAPSHOT_H_
#define SIGVISOR_VMM_BASE_STATS_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <string>

namespace sigvisor {

using StatsSnapshot = std::map<std::string, uint64_t>;

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_BASE_STATS_SNAPSHOT_H_
