#include "vmm/report/kvm_stat_check.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

// KVM's exit statistics and the ledger reason each one counts ("": all exits).
struct CheckedStat {
  const char* name;
  const char* exit_reason;
};
constexpr CheckedStat kCheckedStats[] = {
    {"exits", ""},          {"io_exits", "io"},
    {"mmio_exits", "mmio"}, {"halt_exits", "hlt"},
    {"signal_exits", "interrupted"},
};

}  // namespace

std::vector<UncountedKvmStat> UncountedKvmStats(const RunResult& result) {
  std::vector<UncountedKvmStat> uncounted;
  for (const CheckedStat& checked : kCheckedStats) {
    auto stat = result.kvm_stats.find(checked.name);
    if (stat == result.kvm_stats.end()) continue;
    uint64_t handled = result.ledger.total();
    if (*checked.exit_reason != '\0') {
      const ExitCounts counts = result.ledger.Counts();
      auto reason = counts.find(checked.exit_reason);
      handled = reason == counts.end() ? 0 : reason->second;
    }
    if (stat->second < handled) {
      uncounted.push_back({checked.name, checked.exit_reason, stat->second, handled});
    }
  }
  return uncounted;
}

std::string DescribeUncounted(const UncountedKvmStat& stat) {
  return absl::StrFormat("%s is %d where the VMM handled %d %sexits: this host's KVM does not "
                         "count them",
                         stat.name, stat.kvm, stat.vmm,
                         stat.exit_reason.empty() ? "" : stat.exit_reason + " ");
}

StatsSnapshot WithoutUncounted(const StatsSnapshot& stats,
                               const std::vector<UncountedKvmStat>& uncounted) {
  StatsSnapshot kept = stats;
  for (const UncountedKvmStat& stat : uncounted) kept.erase(stat.name);
  return kept;
}

}  // namespace sigvisor
