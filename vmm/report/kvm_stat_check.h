// Which of KVM's statistics mean something on this host. A statistic that counts a
// kind of exit the VMM handles itself (io_exits: KVM_EXIT_IO, ...) can be checked
// against the VMM's own exit ledger: a host whose KVM keeps it counts at least what
// the VMM saw. Where it counts less (PVM leaves io_exits, mmio_exits and halt_exits
// at 0 beside hundreds of such exits), the statistic says nothing about this host and
// the reports leave it out, saying why.
#ifndef SIGVISOR_VMM_REPORT_KVM_STAT_CHECK_H_
#define SIGVISOR_VMM_REPORT_KVM_STAT_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vmm/run/session.h"

namespace sigvisor {

struct UncountedKvmStat {
  std::string name;         // KVM's name: "io_exits"
  std::string exit_reason;  // the ledger's reason it counts ("io"), "" for every exit
  uint64_t kvm = 0;         // KVM's value over the whole run
  uint64_t vmm = 0;         // the exits the VMM handled over the whole run
};

// The statistics of `result.kvm_stats` that count fewer exits than the VMM handled.
std::vector<UncountedKvmStat> UncountedKvmStats(const RunResult& result);

// "io_exits is 0 where the VMM handled 16 io exits: this host's KVM does not count them".
std::string DescribeUncounted(const UncountedKvmStat& stat);

// `stats` without the statistics named in `uncounted`.
StatsSnapshot WithoutUncounted(const StatsSnapshot& stats,
                               const std::vector<UncountedKvmStat>& uncounted);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_REPORT_KVM_STAT_CHECK_H_
