#include "vmm/report/kvm_exits.h"

namespace sigvisor {

std::optional<KvmExits> KvmExitsOf(const StatsSnapshot& stats) {
  if (stats.empty()) return std::nullopt;
  KvmExits exits;
  if (auto it = stats.find(kKvmExitsTotal.name); it != stats.end()) exits.total = it->second;
  for (const KvmExitStat& reason : kKvmExitReasons) {
    auto it = stats.find(reason.name);
    if (it != stats.end() && it->second != 0) exits.by_reason.emplace_back(reason.name, it->second);
  }
  return exits;
}

}  // namespace sigvisor
