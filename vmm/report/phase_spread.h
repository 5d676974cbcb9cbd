// The spread of repeated phases. A guest may measure a phase several times under one
// name (the Linux init's sigvisor_repeats: guest-kit/linux/init.c). Where CPL0 is
// emulated, each phase's kernel instructions are the operations' own plus whatever
// else the kernel did inside the phase (a timer tick, a wake-up): interference only
// ever adds, so the smallest per-op figure over the samples is the operations' exact
// cost, the median the typical one, and the largest says how much landed inside.
#ifndef SIGVISOR_VMM_REPORT_PHASE_SPREAD_H_
#define SIGVISOR_VMM_REPORT_PHASE_SPREAD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vmm/ledger/phase_tracker.h"

namespace sigvisor {

// One per-op figure over the samples that have it. The median of an even count is
// the mean of the two middle values.
struct SampleSpread {
  double min = 0;
  double median = 0;
  double max = 0;
  uint64_t samples = 0;  // the samples it is taken over
};

// Empty values: nullopt.
std::optional<SampleSpread> SpreadOf(std::vector<double> values);

// The phases of one name, each a sample. Samples of 0 ops have no per-op figure
// and are left out of every spread.
struct PhaseSpread {
  std::string name;
  uint64_t samples = 0;  // phases of this name
  uint64_t ops = 0;      // all samples' ops
  std::optional<SampleSpread> exits;
  // KVM's insn_emulation per op, where guest CPL0 is emulated (else nullopt), over
  // the samples that have the statistic.
  std::optional<SampleSpread> kernel_insns;
  // Over the samples whose time is measured (PhaseResult::time_measured()); nullopt
  // when none is.
  std::optional<SampleSpread> tsc_cycles;
  std::optional<SampleSpread> ns;
};

// One PhaseSpread per name that two or more phases share, in the order of each
// name's first phase. Empty when every phase has a name of its own, so that a run
// without repeated phases reports as before.
std::vector<PhaseSpread> SpreadOfRepeatedPhases(const std::vector<PhaseResult>& phases,
                                                bool cpl0_emulated);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_REPORT_PHASE_SPREAD_H_
