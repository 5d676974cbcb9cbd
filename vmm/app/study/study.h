// `sigvisor study dr7|pda|cerr|dequeue|all`: each reproduces one seed's experiment
// (a published kernel patch and the benchmark its author ran) with the baseline
// kernel and the variant that has the seed's change, prints a table shaped like the
// seed's, then the VM-level figures (kernel instructions, exits and traps per op next
// to time), and says for each figure whether it goes the seed's way.
//
// study_core.cc holds what every study shares (Comparison, the verdicts, JSON, CSV
// and SVG); study_<name>.cc holds one seed's definition, its claims and its table.
#ifndef SIGVISOR_VMM_APP_STUDY_STUDY_H_
#define SIGVISOR_VMM_APP_STUDY_STUDY_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "vmm/app/bench/matrix.h"
#include "vmm/app/bench/results.h"
#include "vmm/run/trap_mechanism.h"

namespace sigvisor::study {

inline constexpr const char* kStudySchema = "sigvisor.study/1";

struct StudyContext;  // one analysis in progress (study_internal.h)

struct StudyDef {
  std::string_view name;         // "dr7"
  std::string_view seed;         // "000"
  std::string_view title;        // what the seed changed
  std::string_view workload;     // the guest workload that reproduces its benchmark
  std::string_view old_variant;  // "baseline"
  std::string_view new_variant;  // "dr7=lazy"
  uint64_t default_ops;
  uint32_t default_repetitions;
  std::vector<TrapMechanism> default_traps;
  // Adds the seed's figures to the context and writes its seed-shaped table.
  void (*analyze)(StudyContext&) = nullptr;
  // Whether the analysis uses the host's own costs (StudyHostCosts): the study command
  // then runs `sigvisor probe`'s measurements first.
  bool uses_host_costs = false;
  // A study of several builds side by side, not old against new (ipi: the IPI ways),
  // extends the shape minimally. `variants`, when not empty, are its bench's builds
  // (bench --variants specs, machine settings allowed: "smp=on@vcpus=2@ipi=pv");
  // old_variant and new_variant are then unused, and the report's old and new are the
  // first two. Such a study makes no Comparison (no seed to judge against): analyze()
  // writes its table and its static data.
  std::vector<std::string_view> variants;
  // What those builds are measured against, as a second bench of one build: ipi's
  // one-vCPU signal (sigpingpong on the baseline). It cannot be a row of the first
  // bench: a bench runs every workload on every build, and a workload across CPUs
  // cannot run on one vCPU. Empty: none. Same ops, runs and trap mechanisms.
  std::string_view reference_workload;
  std::string_view reference_variant;
};

std::span<const StudyDef> Studies();
const StudyDef* FindStudy(std::string_view name);

// "dr7 pda" / "all" -> the studies, in the order given (all: dr7, pda, cerr,
// dequeue). Unknown names and repeats are refused.
absl::StatusOr<std::vector<const StudyDef*>> ParseStudyNames(std::span<const std::string> names);

// The bench matrix of a study (ops/repetitions/traps: the study's defaults unless
// given).
absl::StatusOr<bench::Matrix> StudyMatrix(const StudyDef& study, std::optional<uint64_t> ops,
                                          std::optional<uint32_t> repetitions,
                                          const std::vector<TrapMechanism>& traps,
                                          uint32_t memory_mib);

// The second bench of a study with a reference (StudyDef::reference_workload), with
// `main`'s ops, runs, trap mechanisms, warm-up and memory; nullopt for other studies.
absl::StatusOr<std::optional<bench::Matrix>> ReferenceMatrix(const StudyDef& study,
                                                             const bench::Matrix& main);

// Which way a figure went, or which way the seed says it went.
enum class Direction {
  kNone,  // the seed does not say
  kLower,
  kHigher,
  kSame,
};
std::string_view DirectionName(Direction d);  // "lower", "higher", "same"; "" for kNone

enum class Unit { kNs, kInstructions, kBytes, kTraps, kExits, kLoads };
std::string_view UnitName(Unit u);  // "ns", "instructions", ...: the JSON and CSV "unit"

// What a seed says about one figure: its direction, its own numbers when it gives
// them, and where they come from. The claims are static data written down beside
// each study's table, so the note is a view of a literal.
struct SeedClaim {
  Direction direction = Direction::kNone;
  std::optional<double> old_value, new_value;
  std::string_view note;
};

// One figure of the old build against the new one.
struct Comparison {
  std::string metric;   // "ns_per_op_median", "kernel_insns_per_op", "text_bytes", ... (docs/bench-and-studies.md)
  std::string label;    // for people: "time per signal (median)"
  std::string phase;    // "" for a static figure (sizes)
  std::optional<TrapMechanism> trap;  // none for a static figure
  Unit unit = Unit::kNs;
  double old_value = 0;
  double new_value = 0;
  std::optional<double> p_value;  // for times: Mann-Whitney over the runs
  // For times: the smallest p the test can give runs as few as these (two and two:
  // 0.33). At or above the significance level no result can be significant.
  std::optional<double> p_floor;
  bool exact = false;             // a count or a size: no noise
  SeedClaim seed;

  double change() const { return new_value - old_value; }
  double change_percent() const;
  Direction direction() const;  // kLower, kHigher or kSame
  // Times: p < 0.05. Nullopt for exact counts and sizes: no test applies to them, any
  // difference is a difference.
  std::optional<bool> significant() const;
  // A time whose runs are too few for any p below 0.05.
  bool too_few_runs() const;
  // true: goes the seed's way; false: against it (a finding); nullopt: a time with no
  // evidence either way (not significant, too few runs), or the seed does not say. A
  // time never agrees with a seed that saw no change: a test that finds no difference
  // does not show there is none.
  std::optional<bool> agrees() const;
  // "agrees with the seed", "GOES AGAINST THE SEED (...): a finding", "no evidence
  // either way (p=0.41)", "too few runs for significance (...)", "the seed does not say".
  std::string Verdict() const;
  // How strong a time's evidence is: "p=0.01", "no evidence either way (p=0.41)",
  // "too few runs for significance (p cannot go below 0.33)"; "exact" for counts.
  std::string Evidence() const;
};

struct StudyReport {
  const StudyDef* def = nullptr;
  bench::BenchResult bench;
  // The reference bench (StudyDef::reference_workload), where the study has one.
  std::optional<bench::BenchResult> reference;
  std::vector<Comparison> comparisons;
  std::string text;              // the seed-shaped table and the VM-level figures
  nlohmann::ordered_json extra;  // study-specific static data (sizes, stack, bloat)
  // The Linux column (linux_column.h), as JSON; null when none was asked for.
  nlohmann::ordered_json linux_column = nullptr;
  bool complete() const { return bench.complete() && (!reference || reference->complete()); }
};

// What `study --inject` made every run of the study inject: the specs as given and
// --seed. Empty: no injection.
struct StudyInjections {
  std::vector<std::string> specs;
  uint64_t seed = 1;
};

// What `sigvisor probe` measured on the host the study ran on, for a study whose
// answer depends on the host's own costs (pvsig's crossover). Empty: not probed.
struct StudyHostCosts {
  // The round trip of one exit to the VMM and back: probe's io_exit mechanism (an
  // `out` from guest CPL0, as sigvisor's hypercalls are).
  std::optional<double> exit_round_trip_ns;
};

// Analyses a study's bench result: the comparisons, the text and the static data. With
// `injections`, the text says, above the study's tables, which ran in every run and
// that the figures include what they did, and the VM-level table's title repeats it
// (issue 30: it never said so). `costs`: the probe's figures, where the study uses them.
// `reference`: the result of ReferenceMatrix's bench, for a study that has one.
StudyReport AnalyzeStudy(const StudyDef& study, bench::BenchResult bench,
                         const StudyInjections& injections = {}, const StudyHostCosts& costs = {},
                         std::optional<bench::BenchResult> reference = std::nullopt);

nlohmann::ordered_json StudyToJson(const StudyReport& report);
// `not_run`: studies that were asked for but not started (the command was interrupted).
nlohmann::ordered_json StudiesToJson(const std::vector<StudyReport>& reports,
                                     const std::vector<std::string>& not_run = {});
std::string StudiesToCsv(const std::vector<StudyReport>& reports);
std::string StudiesToSvg(const std::vector<StudyReport>& reports);

}  // namespace sigvisor::study

#endif  // SIGVISOR_VMM_APP_STUDY_STUDY_H_
