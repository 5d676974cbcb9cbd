// Measured phases: the guest's BEGIN(name, ops) / END markers cut the run into
// phases; each phase reports the exits, KVM statistics, wall time and guest TSC
// cycles between its markers, in total and per operation.
#ifndef SIGVISOR_VMM_LEDGER_PHASE_TRACKER_H_
#define SIGVISOR_VMM_LEDGER_PHASE_TRACKER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "vmm/kvm/stats_fd.h"
#include "vmm/ledger/exit_ledger.h"
#include "vmm/ledger/trap_ledger.h"

namespace sigvisor {

// The counters at one phase boundary.
struct PhaseSample {
  ExitCounts exits;
  StatsSnapshot kvm_stats;
  uint64_t wall_ns = 0;    // host CLOCK_MONOTONIC
  uint64_t guest_tsc = 0;  // the guest's rdtsc, as it reported it
  TrapTally traps;         // what the trap ledger had counted
};

// What a phase measured between its markers.
struct PhaseDeltas {
  ExitCounts exits;        // by reason, the markers' own exits excluded
  StatsSnapshot kvm_stats; // likewise
  uint64_t wall_ns = 0;
  uint64_t tsc_cycles = 0;
  TrapTally traps;         // traps the trap mechanism counted
};

struct PhaseResult {
  std::string name;
  uint64_t ops = 0;
  // Net of the marker overhead (the last calibration phase before this one, if
  // any): what the `ops` operations cost.
  ExitCounts exits;
  uint64_t exits_total = 0;
  TrapTally traps;  // by kind and by site, and the debug-register loads
  StatsSnapshot kvm_stats;
  uint64_t wall_ns = 0;
  uint64_t tsc_cycles = 0;
  // The overhead that was subtracted (empty when the guest did not calibrate).
  std::optional<PhaseDeltas> marker_overhead;
};

class PhaseTracker {
 public:
  // Opens a phase. Fails (and changes nothing) if one is already open. A
  // calibration phase is not reported: its deltas become the marker overhead that
  // the following phases are net of.
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
  std::optional<OpenPhase> open_;
  std::optional<PhaseDeltas> overhead_;
  std::vector<PhaseResult> results_;
};

// a - b per counter, never below zero (a net value cannot go negative: noise in a
// calibration makes it 0, not a wrapped huge number).
uint64_t SaturatingSubtract(uint64_t a, uint64_t b);

// after - before for every statistic present in both, zeros kept (counters only go up; a value
// that went down yields 0).
StatsSnapshot SubtractStats(const StatsSnapshot& after, const StatsSnapshot& before);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_PHASE_TRACKER_H_
