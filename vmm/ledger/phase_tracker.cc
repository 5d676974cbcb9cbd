#include "vmm/ledger/phase_tracker.h"

#include "absl/strings/str_format.h"

namespace sigvisor {

StatsSnapshot SubtractStats(const StatsSnapshot& after, const StatsSnapshot& before) {
  StatsSnapshot delta;
  for (const auto& [name, value] : after) {
    auto it = before.find(name);
    if (it == before.end()) continue;
    delta[name] = value >= it->second ? value - it->second : 0;
  }
  return delta;
}

absl::Status PhaseTracker::Begin(std::string name, uint64_t ops, const PhaseSample& at_begin) {
  if (open_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "phase '%s' began while phase '%s' was still open; phases do not nest", name,
        open_->name));
  }
  open_ = OpenPhase{std::move(name), ops, at_begin};
  return absl::OkStatus();
}

absl::Status PhaseTracker::End(const PhaseSample& at_end) {
  if (!open_) return absl::FailedPreconditionError("phase END without a BEGIN");
  PhaseResult result;
  result.name = open_->name;
  result.ops = open_->ops;
  result.exits = Subtract(at_end.exits, open_->begin.exits);
  result.exits_total = Sum(result.exits);
  result.kvm_stats = SubtractStats(at_end.kvm_stats, open_->begin.kvm_stats);
  for (const char* counted_marker_stat : {"exits", "io_exits"}) {
    auto it = result.kvm_stats.find(counted_marker_stat);
    if (it != result.kvm_stats.end() && it->second > 0) --it->second;
  }
  result.wall_ns = at_end.wall_ns - open_->begin.wall_ns;
  result.tsc_cycles =
      at_end.guest_tsc >= open_->begin.guest_tsc ? at_end.guest_tsc - open_->begin.guest_tsc : 0;
  results_.push_back(std::move(result));
  open_.reset();
  return absl::OkStatus();
}

}  // namespace sigvisor
