// What the seed studies share while they analyse a bench result: the context one
// analysis fills in, the helpers that add a figure to it, and the text pieces every
// seed-shaped table uses. Private to vmm/app/study: study_core.cc and the study_<name>.cc
// files include it; nothing else should.
#ifndef SIGVISOR_VMM_APP_STUDY_STUDY_INTERNAL_H_
#define SIGVISOR_VMM_APP_STUDY_STUDY_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vmm/app/bench/results.h"
#include "vmm/app/study/study.h"

namespace sigvisor::study {

// One analysis in progress: the cells of the bench result, the figures found so far,
// the text, and the study's static data.
struct StudyContext {
  const StudyDef& def;
  const bench::BenchResult& bench;
  std::vector<bench::Cell> cells;
  std::vector<Comparison> comparisons;
  std::string text;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  std::string notes;      // explanations printed under the VM-level table
  bool injected = false;  // every run injected faults (--inject): the figures include them
  StudyHostCosts costs;   // the probe's figures for this host, where the study asked for them
  // The reference bench's result (StudyDef::reference_workload), or null.
  const bench::BenchResult* reference = nullptr;

  const std::string& old_name() const { return bench.matrix.variants[0].name; }
  const std::string& new_name() const { return bench.matrix.variants[1].name; }

  // The cell of `phase` for the old (0) or new (1) build under `trap`, or nullptr
  // when no run measured it.
  const bench::Cell* Get(std::string_view phase, size_t which, TrapMechanism trap) const {
    const bench::Cell* cell =
        bench::FindCell(cells, bench, def.workload, phase, bench.matrix.variants[which].name, trap);
    return cell != nullptr && !cell->samples.empty() ? cell : nullptr;
  }
};

// The studies, one per file (study_dr7.cc, ...), in the order `all` runs them; pvsig
// last, no seed's and not among `all`'s.
StudyDef Dr7Study();
StudyDef PdaStudy();
StudyDef CerrStudy();
StudyDef DequeueStudy();
StudyDef PvsigStudy();
StudyDef IpiStudy();

// In a per-run listing, a run whose time the marker calibration swallowed.
inline constexpr std::string_view kTimeNotMeasured =
    "time not measured (below the marker calibration's noise)";

// ---- Figures ------------------------------------------------------------------------

enum class TimeStat { kMedian, kMin, kMean };

// Per-op time of a phase, old against new; p from the runs. No figure when one side
// has no measured time (the calibration swallowed every run's): the study's warnings
// say so.
void AddTime(StudyContext& ctx, std::string_view phase, TrapMechanism trap, TimeStat stat,
             std::string label, const SeedClaim& seed);

// An exact per-op count of a phase (divided by `per`: 2 for "per syscall" when an
// op is two system calls).
void AddCount(StudyContext& ctx, std::string_view phase, TrapMechanism trap, std::string metric,
              std::string label, Unit unit,
              const std::function<std::optional<double>(const bench::PerOpCounts&)>& get,
              const SeedClaim& seed, double per = 1);

// KVM's own exits per op of a phase (vmm/report/kvm_exits.h), old against new: the
// median over the runs, with p from the runs, since KVM counts the host's events too.
// Added beside the VMM's exits (after them where the study shows them), under every
// trap mechanism: with nothing trapping the VMM sees no exit where KVM still takes
// some. No figure where a side's runs have none (a host whose KVM gives no statistics).
// The seeds ran without a hypervisor: they say nothing about it.
void AddKvmExits(StudyContext& ctx, std::string_view phase, TrapMechanism trap);

// A figure of the images themselves (sizes): exact, no phase, no trap.
void AddStatic(StudyContext& ctx, std::string metric, std::string label, Unit unit,
               double old_value, double new_value, const SeedClaim& seed);

// The kernels' text sizes, as a figure and in the static data.
void AddTextBytes(StudyContext& ctx, const SeedClaim& seed);
uint64_t TextBytes(const StudyContext& ctx, size_t which);

std::optional<double> Insns(const bench::PerOpCounts& c);
std::optional<double> Exits(const bench::PerOpCounts& c);
std::optional<double> Kind(const bench::PerOpCounts& c, const char* kind);

// The comparison of `metric` in `phase` under `trap`; nullptr if there is none.
const Comparison* FindComparison(const StudyContext& ctx, std::string_view metric,
                                 std::string_view phase, TrapMechanism trap);

// The per-run phase times of one cell, for a seed-shaped listing.
std::vector<const bench::PhaseSample*> PhaseSamples(const bench::Cell& cell);

// ---- Text pieces ----------------------------------------------------------------------

std::string Num(double v);
std::string SignedNum(double v);
std::string Percent(double fraction);

// What `trap` means on the host the study ran on.
std::string TrapNote(TrapMechanism trap, const bench::HostInfoSummary& host);

// The VM-level table: every comparison of the study, grouped by trap; `per` names
// the op.
std::string ComparisonTable(const StudyContext& ctx, std::string_view per);

// "That's about a N% speedup (...)" for a time comparison; "" without one.
std::string SpeedupLine(const Comparison* c, std::string_view seed_text);

}  // namespace sigvisor::study

#endif  // SIGVISOR_VMM_APP_STUDY_STUDY_INTERNAL_H_
