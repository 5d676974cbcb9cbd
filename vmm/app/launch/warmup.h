// --warmup: the unmeasured operations a workload runs before its measured phase.
//
// Every workload that measures signals runs at least one, so that each measured op
// takes the path the first one paved (guest-kit/user/workloads.h's struct measure).
// More let a VM that booted milliseconds ago run its loop before it is timed, as a VM
// that spent seconds in firmware has: `bench --peer` compares against such a VM
// (docs/bench-and-studies.md). Warm-up ops sit outside the phase markers, so no
// phase's counts change; only the run's totals grow by theirs.
#ifndef SIGVISOR_VMM_APP_LAUNCH_WARMUP_H_
#define SIGVISOR_VMM_APP_LAUNCH_WARMUP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace sigvisor::launch {

// What both guest kernels' init does when the command line does not say.
inline constexpr uint64_t kDefaultWarmupOps = 1;
// About 20 minutes of divzero where guest CPL0 is emulated (~1 ms an op).
inline constexpr uint64_t kMaxWarmupOps = 1u << 20;

// Whether the bundled kernel's or the Linux init's `workload` runs warm-up ops: the
// signal workloads and the runs made of them (summary, all; "" is the default,
// summary). hello, console, hostsig, fault and selftest have none.
bool WorkloadHasWarmup(std::string_view workload);

// The --warmup value a run of `workload` with `warmup` ops passes on to a guest command
// line builder: "" (the guest's own default, so the line stays what it was before the
// flag) when `warmup` is the default or the workload runs no warm-up ops, else the
// count.
std::string WarmupValue(uint64_t warmup, std::string_view workload);

// --warmup's value for `workload`: nullopt when empty (the guest's default). Refused
// in one line: not a whole number, 0 (the first op must stay unmeasured), more than
// kMaxWarmupOps, or a workload without warm-up ops.
absl::StatusOr<std::optional<uint64_t>> ParseWarmup(const std::string& value,
                                                    const std::string& workload);

}  // namespace sigvisor::launch

#endif  // SIGVISOR_VMM_APP_LAUNCH_WARMUP_H_
