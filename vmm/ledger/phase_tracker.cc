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

uint64_t SaturatingSubtract(uint64_t a, uint64_t b) { return a >= b ? a - b : 0; }

namespace {

// counts - overhead per name, never below zero; names that reach zero go.
void SubtractOverhead(ExitCounts& counts, const ExitCounts& overhead) {
  for (auto& [name, count] : counts) {
    auto it = overhead.find(name);
    if (it != overhead.end()) count = SaturatingSubtract(count, it->second);
  }
  std::erase_if(counts, [](const auto& entry) { return entry.second == 0; });
}

}  // namespace

absl::Status PhaseTracker::Begin(std::string name, uint64_t ops, const PhaseSample& at_begin,
                                 bool calibration) {
  if (open_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "phase '%s' began while phase '%s' was still open; phases do not nest", name,
        open_->name));
  }
  open_ = OpenPhase{std::move(name), ops, at_begin, calibration};
  return absl::OkStatus();
}

absl::Status PhaseTracker::End(const PhaseSample& at_end) {
  if (!open_) return absl::FailedPreconditionError("phase END without a BEGIN");
  PhaseDeltas raw;
  raw.exits = Subtract(at_end.exits, open_->begin.exits);
  raw.traps = Subtract(at_end.traps, open_->begin.traps);
  raw.kvm_stats = SubtractStats(at_end.kvm_stats, open_->begin.kvm_stats);
  for (const char* counted_marker_stat : {"exits", "io_exits"}) {
    auto it = raw.kvm_stats.find(counted_marker_stat);
    if (it != raw.kvm_stats.end() && it->second > 0) --it->second;
  }
  raw.wall_ns = SaturatingSubtract(at_end.wall_ns, open_->begin.wall_ns);
  raw.tsc_cycles = SaturatingSubtract(at_end.guest_tsc, open_->begin.guest_tsc);
  if (open_->calibration) {
    overhead_ = std::move(raw);
    open_.reset();
    return absl::OkStatus();
  }

  PhaseResult result;
  result.name = open_->name;
  result.ops = open_->ops;
  result.exits = raw.exits;
  result.traps = raw.traps;
  result.kvm_stats = raw.kvm_stats;
  result.wall_ns = raw.wall_ns;
  result.tsc_cycles = raw.tsc_cycles;
  if (overhead_) {
    SubtractOverhead(result.exits, overhead_->exits);
    SubtractOverhead(result.traps.by_kind, overhead_->traps.by_kind);
    SubtractOverhead(result.traps.by_site, overhead_->traps.by_site);
    result.traps.dr_loads = SaturatingSubtract(result.traps.dr_loads, overhead_->traps.dr_loads);
    for (auto& [name, value] : result.kvm_stats) {
      auto it = overhead_->kvm_stats.find(name);
      if (it != overhead_->kvm_stats.end()) value = SaturatingSubtract(value, it->second);
    }
    result.wall_ns = SaturatingSubtract(result.wall_ns, overhead_->wall_ns);
    result.tsc_cycles = SaturatingSubtract(result.tsc_cycles, overhead_->tsc_cycles);
    result.marker_overhead = overhead_;
  }
  result.exits_total = Sum(result.exits);
  results_.push_back(std::move(result));
  open_.reset();
  return absl::OkStatus();
}

}  // namespace sigvisor
