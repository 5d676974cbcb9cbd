// Measured phases: the guest's BEGIN(name, ops) / END markers cut the run into
// phases; each phase reports the exits, KVM statistics, wall time and guest TSC
// cycles between its markers, in total and per operation.
#ifndef SIGVISOR_VMM_LEDGER_PHASE_TRACKER_H_
#define SIGVISOR_VMM_LEDGER_PHASE_TRACKER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "vmm/base/stats_snapshot.h"
#include "vmm/ledger/exit_ledger.h"
#include "vmm/ledger/guest_ipis.h"
#include "vmm/ledger/latency.h"
#include "vmm/ledger/trap_ledger.h"

namespace sigvisor {

// Another vCPU's counters at a phase boundary (a run on several vCPUs: the markers
// come from vCPU 0, whose counters are PhaseSample's own).
struct VcpuSample {
  int vcpu = 0;  // its index, 1 ..
  ExitCounts exits;
  StatsSnapshot kvm_stats;
};

// The counters at one phase boundary.
struct PhaseSample {
  ExitCounts exits;
  StatsSnapshot kvm_stats;
  uint64_t wall_ns = 0;    // host CLOCK_MONOTONIC
  uint64_t guest_tsc = 0;  // the guest's rdtsc, as it reported it
  TrapTally traps;         // what the trap ledger had counted
  std::vector<VcpuSample> other_vcpus;  // vCPUs 1 .. N-1, in order
  GuestIpiCounts guest_ipis;            // the marker's: an SMP kernel's IPI counts so far
  // The VMM's handling time of the exits so far, by reason (vCPU 0's).
  std::map<std::string, LatencyStats, std::less<>> exit_latency;
};

// What a phase measured between its markers.
struct PhaseDeltas {
  ExitCounts exits;        // by reason, the markers' own exits excluded
  StatsSnapshot kvm_stats; // likewise
  uint64_t wall_ns = 0;
  uint64_t tsc_cycles = 0;
  TrapTally traps;         // traps the trap mechanism counted
  // The other vCPUs' (VcpuSample's) differences, in order. Their exits are all
  // theirs: the markers' exits are vCPU 0's.
  std::vector<VcpuSample> other_vcpus;
};

// How the calibration phases before a phase varied. The guest runs several in a row
// (phase_begin() in guest-kit/user/ulib.c): the markers cost the same counts each
// time, but a sample's time is only ever slowed (the host preempted the VMM), never
// sped up, so the fastest is the best estimate of the markers' time and the spread
// says how far that estimate can be trusted.
struct CalibrationNoise {
  uint64_t samples = 0;     // calibration phases in the run before the phase
  // Per clock, the median sample minus the fastest; with one sample nothing is known
  // of the spread, and the sample itself stands for it (the phase must then be at
  // least twice the calibration).
  uint64_t wall_ns = 0;
  uint64_t tsc_cycles = 0;
};

// Whether a phase's times are measurements.
enum class PhaseTime {
  kMeasured,
  // The phase's time net of the calibration does not exceed the calibration's noise
  // (on one clock or both): the markers' cost swallows what the ops cost, so there
  // is no figure to report (wall_ns and tsc_cycles are 0 and mean nothing).
  kBelowCalibrationNoise,
};
std::string_view PhaseTimeName(PhaseTime time);  // "measured", "below_calibration_noise"

struct PhaseResult {
  std::string name;
  uint64_t ops = 0;
  // Net of the marker overhead (the last calibration phases before this one, if
  // any): what the `ops` operations cost.
  ExitCounts exits;
  uint64_t exits_total = 0;
  TrapTally traps;  // by kind and by site, and the debug-register loads
  StatsSnapshot kvm_stats;
  // The times, when `time` is kMeasured; else 0 (see MeasuredWallNs()).
  uint64_t wall_ns = 0;
  uint64_t tsc_cycles = 0;
  PhaseTime time = PhaseTime::kMeasured;
  // Whether wall_ns and tsc_cycles tell the same time at the guest's TSC rate;
  // nullopt when not checked (the rate is unknown, or the time is not measured).
  std::optional<bool> clocks_agree;
  // One sentence per problem with the times (not measured, clocks disagree), with
  // the figures behind it: what the run's warnings and the reports say.
  std::vector<std::string> time_warnings;
  // The overhead that was subtracted (empty when the guest did not calibrate):
  // the first calibration's counts, each clock's fastest calibration time.
  std::optional<PhaseDeltas> marker_overhead;
  std::optional<CalibrationNoise> calibration_noise;  // with marker_overhead
  // The VMM's handling time of the phase's exits, by reason: a log2 histogram of every
  // exit between the markers (the BEGIN marker's own one included; not net of the
  // calibration, whose exits took their own times).
  std::map<std::string, LatencyHistogram, std::less<>> exit_latency;
  // A run on several vCPUs: what each other vCPU did in the phase (its exits by
  // reason and KVM's statistics of it), net of the calibration as vCPU 0's counts are.
  // Empty on one vCPU. Exits and statistics above are vCPU 0's.
  std::vector<VcpuSample> other_vcpus;
  // An SMP kernel's own count of the phase's IPIs, every CPU's (guest_ipis.h): sent
  // by its IPI rule, by and to each CPU. Not net of the calibration: the markers
  // send none. Empty when the guest does not count them.
  GuestIpiCounts guest_ipis;

  // guest_ipis of `vcpu` (its CPU number), or null where the guest did not count it.
  const GuestIpis* guest_ipis_of(int vcpu) const {
    return vcpu >= 0 && vcpu < static_cast<int>(guest_ipis.size()) ? &guest_ipis[vcpu] : nullptr;
  }

  bool time_measured() const { return time == PhaseTime::kMeasured; }
  std::optional<uint64_t> MeasuredWallNs() const {
    return time_measured() ? std::optional<uint64_t>(wall_ns) : std::nullopt;
  }
  std::optional<uint64_t> MeasuredTscCycles() const {
    return time_measured() ? std::optional<uint64_t>(tsc_cycles) : std::nullopt;
  }
};

class PhaseTracker {
 public:
  // `guest_tsc_khz`: the rate of the guest's TSC when it runs in real time (KVM),
  // against which each phase's two clocks are checked; 0 when unknown or when the
  // guest's counter is not a clock (an interpreter's modelled cycles): no check.
  explicit PhaseTracker(uint64_t guest_tsc_khz = 0) : guest_tsc_khz_(guest_tsc_khz) {}

  // Opens a phase. Fails (and changes nothing) if one is already open. A
  // calibration phase is not reported: its deltas, with those of the calibration
  // phases right before it, become the marker overhead that the following phases
  // are net of.
  absl::Status Begin(std::string name, uint64_t ops, const PhaseSample& at_begin,
                     bool calibration = false);

  // Closes the open phase. `at_end` is taken while the END marker's own exit is being
  // handled: KVM has already counted that exit in `exits` and `io_exits`, and the
  // ledger has not, so those two KVM stats are reduced by one here.
  absl::Status End(const PhaseSample& at_end);

  bool open() const { return open_.has_value(); }
  const std::vector<PhaseResult>& results() const { return results_; }

 private:
  struct OpenPhase {
    std::string name;
    uint64_t ops;
    PhaseSample begin;
    bool calibration;
  };
  // Subtracts the calibration from `raw` into `result`, and judges the times.
  void NetOfCalibration(const PhaseDeltas& raw, PhaseResult& result) const;
  void CheckClocks(PhaseResult& result) const;

  uint64_t guest_tsc_khz_;
  std::optional<OpenPhase> open_;
  // The calibration samples of the latest run of calibration phases; a measured
  // phase between two calibrations starts a new run.
  std::vector<PhaseDeltas> calibrations_;
  bool last_was_calibration_ = false;
  std::vector<PhaseResult> results_;
};

// a - b per counter, never below zero (a net count cannot go negative: a wrapped
// huge number would be worse than 0). Times net of a calibration are judged too:
// see PhaseTime.
uint64_t SaturatingSubtract(uint64_t a, uint64_t b);

// after - before for every statistic present in both, zeros kept (counters only go up; a value
// that went down yields 0).
StatsSnapshot SubtractStats(const StatsSnapshot& after, const StatsSnapshot& before);
// after - before per CPU (never below zero); empty unless both have the same CPUs.
GuestIpiCounts SubtractGuestIpis(const GuestIpiCounts& after, const GuestIpiCounts& before);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_PHASE_TRACKER_H_
