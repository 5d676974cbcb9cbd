#include "vmm/app/launch/warmup.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sigvisor::launch {
namespace {

// As guest-kit/user/init.c and guest-kit/linux/init.c pass struct measure's warmup.
constexpr std::string_view kWarmedWorkloads[] = {"",        "summary",     "all",    "divzero",
                                                 "lat_sig", "sigpingpong", "pipe_rw"};

}  // namespace

bool WorkloadHasWarmup(std::string_view workload) {
  return std::find(std::begin(kWarmedWorkloads), std::end(kWarmedWorkloads), workload) !=
         std::end(kWarmedWorkloads);
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
    return absl::InvalidArgumentError(absl::StrFormat(
        "--warmup: workload '%s' runs no warm-up ops (summary, divzero, lat_sig, sigpingpong "
        "and pipe_rw do)",
        workload));
  }
  return count;
}

}  // namespace sigvisor::launch
