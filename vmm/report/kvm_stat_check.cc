#include "vmm/report/kvm_stat_check.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "vmm/report/kvm_exits.h"

namespace sigvisor {
namespace {

// Checks one of KVM's exit statistics (kvm_exits.h) that has a VMM reason.
void Check(const KvmExitStat& checked, const RunResult& result,
           std::vector<UncountedKvmStat>& uncounted) {
  if (checked.vmm_reason == nullptr) return;
  auto stat = result.kvm_stats.find(checked.name);
  if (stat == result.kvm_stats.end()) return;
  uint64_t handled = result.ledger.total();
  if (*checked.vmm_reason != '\0') {
    const ExitCounts counts = result.ledger.Counts();
    auto reason = counts.find(checked.vmm_reason);
    handled = reason == counts.end() ? 0 : reason->second;
  }
  if (stat->second < handled) {
    uncounted.push_back({checked.name, checked.vmm_reason, stat->second, handled});
  }
}

}  // namespace

std::vector<UncountedKvmStat> UncountedKvmStats(const RunResult& result) {
  std::vector<UncountedKvmStat> uncounted;
  Check(kKvmExitsTotal, result, uncounted);
  for (const KvmExitStat& checked : kKvmExitReasons) Check(checked, result, uncounted);
  return uncounted;
}

std::string DescribeUncounted(const UncountedKvmStat& stat) {
  return absl::StrFormat(
      "%s is %d where the VMM handled %d %sexits: this host's KVM does not "
      "count them",
      stat.name, stat.kvm, stat.vmm, stat.exit_reason.empty() ? "" : stat.exit_reason + " ");
}

StatsSnapshot WithoutUncounted(const StatsSnapshot& stats,
                               const std::vector<UncountedKvmStat>& uncounted) {
  StatsSnapshot kept = stats;
  for (const UncountedKvmStat& stat : uncounted) kept.erase(stat.name);
  return kept;
}

}  // namespace sigvisor
