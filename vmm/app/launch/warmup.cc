#include "vmm/app/launch/warmup.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/app/launch/workloads.h"

namespace sigvisor::launch {

bool WorkloadHasWarmup(std::string_view workload) {
  if (workload.empty()) return true;  // the default, summary
  const Workload* w = FindWorkload(workload);
  return w != nullptr && w->warmup;
}

std::string WarmupValue(uint64_t warmup, std::string_view workload) {
  if (warmup == kDefaultWarmupOps || !WorkloadHasWarmup(workload)) return "";
  return absl::StrCat(warmup);
}

absl::StatusOr<std::optional<uint64_t>> ParseWarmup(const std::string& value,
                                                    const std::string& workload) {
  if (value.empty()) return std::nullopt;
  uint64_t count;
  if (!absl::SimpleAtoi(value, &count) || count == 0 || count > kMaxWarmupOps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--warmup '%s' is not a count from 1 to %d (the first op always runs unmeasured)",
        value, kMaxWarmupOps));
  }
  if (!WorkloadHasWarmup(workload)) {
    // The bundled kernel's (the Linux init's `all` is its summary and self-test).
    std::vector<std::string> warmed;
    for (const Workload& w : Workloads()) {
      if (w.warmup && w.inits != Inits::kLinux) warmed.emplace_back(w.name);
    }
    const std::string last = warmed.back();
    warmed.pop_back();
    return absl::InvalidArgumentError(
        absl::StrFormat("--warmup: workload '%s' runs no warm-up ops (%s and %s do)", workload,
                        absl::StrJoin(warmed, ", "), last));
  }
  return count;
}

}  // namespace sigvisor::launch
