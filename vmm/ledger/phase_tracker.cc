#include "vmm/ledger/phase_tracker.h"

#include <algorithm>
#include <cmath>

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

GuestIpiCounts SubtractGuestIpis(const GuestIpiCounts& after, const GuestIpiCounts& before) {
  if (after.size() != before.size()) return {};
  GuestIpiCounts delta(after.size());
  for (size_t cpu = 0; cpu < after.size(); ++cpu) {
    delta[cpu] = {.sent = SaturatingSubtract(after[cpu].sent, before[cpu].sent),
                  .received = SaturatingSubtract(after[cpu].received, before[cpu].received)};
  }
  return delta;
}

namespace {

// counts - overhead per name, never below zero; names that reach zero go.
void SubtractOverhead(ExitCounts& counts, const ExitCounts& overhead) {
  for (auto& [name, count] : counts) {
    auto it = overhead.find(name);
    if (it != overhead.end()) count = SaturatingSubtract(count, it->second);
  }
  std::erase_if(counts, [](const auto& entry) { return entry.second == 0; });
}

// after - before per vCPU, matched by index (a vCPU missing at either end is left out:
// the run lost it, and nothing can be said of its phase).
std::vector<VcpuSample> SubtractVcpus(const std::vector<VcpuSample>& after,
                                      const std::vector<VcpuSample>& before) {
  std::vector<VcpuSample> deltas;
  for (const VcpuSample& end : after) {
    auto begin = std::find_if(before.begin(), before.end(),
                              [&](const VcpuSample& b) { return b.vcpu == end.vcpu; });
    if (begin == before.end()) continue;
    deltas.push_back(VcpuSample{end.vcpu, Subtract(end.exits, begin->exits),
                                SubtractStats(end.kvm_stats, begin->kvm_stats)});
  }
  return deltas;
}

void SubtractStatsOverhead(StatsSnapshot& stats, const StatsSnapshot& overhead) {
  for (auto& [name, value] : stats) {
    auto it = overhead.find(name);
    if (it != overhead.end()) value = SaturatingSubtract(value, it->second);
  }
}

// The median minus the smallest of `values` (not empty); one value: itself.
uint64_t Spread(std::vector<uint64_t> values) {
  std::sort(values.begin(), values.end());
  if (values.size() == 1) return values.front();
  const size_t n = values.size();
  const uint64_t median = n % 2 ? values[n / 2] : values[n / 2 - 1] + (values[n / 2] - values[n / 2 - 1]) / 2;
  return median - values.front();
}

std::string Us(uint64_t ns) { return absl::StrFormat("%.1f us", static_cast<double>(ns) / 1e3); }

// Two clocks over the same span differ by the markers' own exits (the guest's TSC
// runs through the BEGIN exit's handling, the host clock through the END exit's)
// and by each clock's calibration noise. Beyond the larger of half the smaller
// figure and that noise, one clock took in time the other did not (the VMM
// preempted at one marker): neither can be trusted to be the phase's time.
constexpr double kClockAgreement = 0.5;

}  // namespace

std::string_view PhaseTimeName(PhaseTime time) {
  switch (time) {
    case PhaseTime::kMeasured: return "measured";
    case PhaseTime::kBelowCalibrationNoise: return "below_calibration_noise";
  }
  return "unknown";
}

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
  raw.other_vcpus = SubtractVcpus(at_end.other_vcpus, open_->begin.other_vcpus);
  if (open_->calibration) {
    if (!last_was_calibration_) calibrations_.clear();
    calibrations_.push_back(std::move(raw));
    last_was_calibration_ = true;
    open_.reset();
    return absl::OkStatus();
  }
  last_was_calibration_ = false;

  PhaseResult result;
  result.name = open_->name;
  result.ops = open_->ops;
  for (const auto& [reason, stats] : at_end.exit_latency) {
    auto begin = open_->begin.exit_latency.find(reason);
    LatencyHistogram between =
        LatencyBetween(stats, begin == open_->begin.exit_latency.end() ? nullptr : &begin->second);
    if (between.count != 0) result.exit_latency.emplace(reason, between);
  }
  NetOfCalibration(raw, result);
  result.guest_ipis = SubtractGuestIpis(at_end.guest_ipis, open_->begin.guest_ipis);
  CheckClocks(result);
  result.exits_total = Sum(result.exits);
  results_.push_back(std::move(result));
  open_.reset();
  return absl::OkStatus();
}

void PhaseTracker::NetOfCalibration(const PhaseDeltas& raw, PhaseResult& result) const {
  result.exits = raw.exits;
  result.traps = raw.traps;
  result.kvm_stats = raw.kvm_stats;
  result.wall_ns = raw.wall_ns;
  result.tsc_cycles = raw.tsc_cycles;
  result.other_vcpus = raw.other_vcpus;
  if (calibrations_.empty()) return;

  // Counts: the first sample's, which is what a guest that calibrates once measures
  // (the markers' path is the same each time). Times: each clock's fastest sample.
  PhaseDeltas overhead = calibrations_.front();
  std::vector<uint64_t> walls, tscs;
  for (const PhaseDeltas& sample : calibrations_) {
    walls.push_back(sample.wall_ns);
    tscs.push_back(sample.tsc_cycles);
  }
  overhead.wall_ns = *std::min_element(walls.begin(), walls.end());
  overhead.tsc_cycles = *std::min_element(tscs.begin(), tscs.end());
  const CalibrationNoise noise{calibrations_.size(), Spread(walls), Spread(tscs)};

  SubtractOverhead(result.exits, overhead.exits);
  SubtractOverhead(result.traps.by_kind, overhead.traps.by_kind);
  SubtractOverhead(result.traps.by_site, overhead.traps.by_site);
  result.traps.dr_loads = SaturatingSubtract(result.traps.dr_loads, overhead.traps.dr_loads);
  result.traps.hypercalls =
      SaturatingSubtract(result.traps.hypercalls, overhead.traps.hypercalls);
  SubtractStatsOverhead(result.kvm_stats, overhead.kvm_stats);
  for (VcpuSample& vcpu : result.other_vcpus) {
    for (const VcpuSample& calibrated : overhead.other_vcpus) {
      if (calibrated.vcpu != vcpu.vcpu) continue;
      SubtractOverhead(vcpu.exits, calibrated.exits);
      SubtractStatsOverhead(vcpu.kvm_stats, calibrated.kvm_stats);
    }
  }
  const uint64_t net_wall = SaturatingSubtract(raw.wall_ns, overhead.wall_ns);
  const uint64_t net_tsc = SaturatingSubtract(raw.tsc_cycles, overhead.tsc_cycles);
  if (net_wall > noise.wall_ns && net_tsc > noise.tsc_cycles) {
    result.wall_ns = net_wall;
    result.tsc_cycles = net_tsc;
  } else {
    result.wall_ns = 0;
    result.tsc_cycles = 0;
    result.time = PhaseTime::kBelowCalibrationNoise;
    result.time_warnings.push_back(absl::StrFormat(
        "phase '%s': time not measured: below the marker calibration's noise (%s and %d TSC "
        "cycles between the markers; the markers alone %s and %d cycles, the fastest of %d "
        "calibration%s, %s)",
        result.name, Us(raw.wall_ns), raw.tsc_cycles, Us(overhead.wall_ns), overhead.tsc_cycles,
        noise.samples, noise.samples == 1 ? "" : "s",
        noise.samples == 1 ? "whose spread is unknown"
                           : absl::StrFormat("which vary by %s and %d cycles", Us(noise.wall_ns),
                                             noise.tsc_cycles)));
  }
  result.marker_overhead = std::move(overhead);
  result.calibration_noise = noise;
}

void PhaseTracker::CheckClocks(PhaseResult& result) const {
  if (guest_tsc_khz_ == 0 || !result.time_measured()) return;
  const double ns_per_cycle = 1e6 / static_cast<double>(guest_tsc_khz_);
  const double by_tsc = static_cast<double>(result.tsc_cycles) * ns_per_cycle;
  const double by_wall = static_cast<double>(result.wall_ns);
  double allowed = kClockAgreement * std::min(by_tsc, by_wall);
  if (result.calibration_noise) {
    allowed = std::max(allowed, static_cast<double>(result.calibration_noise->wall_ns) +
                                    static_cast<double>(result.calibration_noise->tsc_cycles) *
                                        ns_per_cycle);
  }
  result.clocks_agree = std::fabs(by_tsc - by_wall) <= allowed;
  if (!*result.clocks_agree) {
    result.time_warnings.push_back(absl::StrFormat(
        "phase '%s': ns and tsc_cycles disagree beyond the TSC rate: %d ns, but %d cycles are "
        "%.0f ns at %.3f GHz",
        result.name, result.wall_ns, result.tsc_cycles, by_tsc,
        static_cast<double>(guest_tsc_khz_) / 1e6));
  }
}

}  // namespace sigvisor
