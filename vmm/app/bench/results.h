// What a bench measured: one sample per run (raw totals, so shards merge exactly),
// and per cell (workload x phase x variant x trap) the per-op counts, which must
// agree across repetitions, and the per-op times as median, min and max.
//
// JSON: schema "sigvisor.bench/1", documented in docs/bench-and-studies.md.
#ifndef SIGVISOR_VMM_APP_BENCH_RESULTS_H_
#define SIGVISOR_VMM_APP_BENCH_RESULTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "vmm/app/bench/matrix.h"
#include "vmm/app/bench/stats.h"
#include "vmm/run/session.h"

namespace sigvisor::bench {

inline constexpr const char* kBenchSchema = "sigvisor.bench/1";

// The trap kinds a per-op row always shows (TrapLedger's kinds).
inline constexpr const char* kTrapKinds[] = {"dr_write", "dr_read", "segment_load", "msr_write"};

// One vCPU's part of a phase on several vCPUs: the exits of it that reached the VMM
// (exact), the IPIs the guest counted sent to it (the bundled kernel's smp=on builds:
// exact), and the interrupts KVM injected into it (its `irq_injections`: for the
// bundled kernel, which takes no other interrupt, the IPIs it received, plus any
// re-injection of one whose delivery an exit cut short; docs/smp.md).
struct VcpuPhaseSample {
  int vcpu = 0;  // its index; vCPU 0 is the one the markers come from
  uint64_t exits = 0;
  // nullopt: the guest does not count its IPIs (a uniprocessor build, Linux), and in
  // results written before sigvisor read the count.
  std::optional<uint64_t> ipis;
  std::optional<uint64_t> interrupts;  // nullopt: this host's KVM keeps no irq_injections
  bool operator==(const VcpuPhaseSample&) const = default;
};

// One measured phase of one run: totals over its `ops` operations.
struct PhaseSample {
  std::string name;
  uint64_t ops = 0;
  uint64_t exits = 0;
  std::map<std::string, uint64_t> traps;  // by kind
  uint64_t dr_loads = 0;
  std::optional<uint64_t> kernel_insns;  // insn_emulation, where CPL0 is emulated
  // KVM's own exits (vmm/report/kvm_exits.h), beside `exits`, the VMM's: its `exits`
  // statistic and the non-zero ones by reason. nullopt (and none by reason) where the
  // host's KVM gives no statistics or does not keep `exits`, and in results written
  // before them.
  std::optional<uint64_t> kvm_exits;
  std::map<std::string, uint64_t> kvm_exits_by_reason;
  // The times; nullopt where the marker calibration swallowed the phase (its time
  // was below the calibration's noise): not a sample of the time, though the counts are.
  std::optional<uint64_t> wall_ns;
  std::optional<uint64_t> tsc_cycles;
  // Whether ns and tsc_cycles agreed at the TSC rate; nullopt: not checked.
  std::optional<bool> clocks_agree;
  // A run on several vCPUs (a variant's @vcpus=N): each vCPU's part, vCPU 0 first (its
  // exits are `exits` above). Empty on one vCPU, and in results written before them.
  std::vector<VcpuPhaseSample> vcpus;

  bool time_measured() const { return wall_ns.has_value() && tsc_cycles.has_value(); }
  uint64_t traps_total() const;
  bool operator==(const PhaseSample&) const = default;
};

struct RunSample {
  RunSpec spec;
  uint32_t shard = 1;   // which --shard slice ran it
  std::string outcome;  // OutcomeName(), or "host_error" when it could not boot
  int exit_code = 0;
  std::string diagnosis;
  uint64_t wall_ns = 0;  // boot to end
  std::vector<PhaseSample> phases;
  // --inject: how the run's injections ended, by outcome name (empty without).
  std::map<std::string, uint64_t> injections;

  // Counted into the cells: the guest exited with status 0.
  bool ok() const { return outcome == "exited" && exit_code == 0; }
  bool operator==(const RunSample&) const = default;
};

// A run's sample from what BootAndRun reported.
RunSample SampleFromResult(const RunSpec& spec, const RunResult& result, bool cpl0_emulated);

struct HostInfoSummary {
  std::string kind;  // "pvm", "hardware"
  bool cpl0_emulated = false;
  bool operator==(const HostInfoSummary&) const = default;
};

struct BenchResult {
  Matrix matrix;
  HostInfoSummary host;
  uint32_t shard_count = 1;
  std::vector<uint32_t> shards;  // the slices this result holds (1-based), sorted
  size_t runs_expected = 0;      // runs of its slice; merged: of the whole matrix
  std::vector<RunSample> runs;   // in schedule order: measured and failed alike
  bool interrupted = false;      // stopped before the end (SIGINT)
  std::vector<std::string> warnings;

  size_t runs_ok() const;
  size_t runs_failed() const { return runs.size() - runs_ok(); }
  // Every expected run measured, none failed, not interrupted: for one shard, its
  // slice; for a merge, the whole matrix.
  bool complete() const;
};

// Per-op counts of a cell (from its runs; all equal when counts agree).
struct PerOpCounts {
  double exits = 0;
  double traps = 0;
  std::map<std::string, double> traps_by_kind;  // every kTrapKinds entry
  double dr_loads = 0;
  std::optional<double> kernel_insns;
};

// One vCPU's per-op figures in a cell: the medians over its samples.
struct VcpuPerOp {
  int vcpu = 0;
  double exits = 0;
  std::optional<double> ipis;        // nullopt unless every sample has it
  std::optional<double> interrupts;  // nullopt unless every sample has it
};

struct Cell {
  size_t workload = 0, variant = 0, trap = 0;
  std::string phase;
  uint64_t ops = 0;
  std::vector<const RunSample*> samples;  // the ok runs, in schedule order
  PerOpCounts per_op;                     // the median over samples
  bool counts_agree = true;
  std::vector<std::string> mismatches;  // "kernel_insns per op: 832 (4 runs), 833 (1 run)"
  // Samples whose time is not measured (below the marker calibration's noise):
  // counted above, left out of the times below.
  size_t times_unmeasured = 0;
  size_t clocks_disagree = 0;     // samples whose ns and tsc_cycles disagree
  std::vector<double> ns_per_op;  // one per sample with a measured time
  std::vector<double> tsc_per_op;
  Summary ns;  // n == 0: no time measured
  Summary tsc;
  // KVM's own exits per op (vmm/report/kvm_exits.h), when every sample has them. A
  // measurement rather than an exact count (KVM counts the host's events too: its
  // interrupts, the emulator's batches), so summarised as the times are, not in per_op
  // and not checked for agreement. By reason: each any sample has, the median over the
  // samples (0 for one without it).
  std::vector<double> kvm_exits_per_op;  // one per sample; empty: none
  Summary kvm_exits;                     // n == 0: none
  std::map<std::string, double> kvm_exits_by_reason;
  // Per vCPU (a variant of several; empty on one), when every sample has the vCPU.
  std::vector<VcpuPerOp> vcpus;
};

// Cells in matrix order (workload, phase in the order the guest ran them, trap,
// variant); a cell with no ok run is still listed (samples empty) when another
// variant measured that phase. The Cell pointers point into `result`.
std::vector<Cell> Cells(const BenchResult& result);

// The cell of (workload name, phase, variant name, trap mechanism), or nullptr.
const Cell* FindCell(const std::vector<Cell>& cells, const BenchResult& result,
                     std::string_view workload, std::string_view phase, std::string_view variant,
                     TrapMechanism trap);

nlohmann::ordered_json BenchToJson(const BenchResult& result);
// Parses a document BenchToJson wrote (for merge). Refuses other schemas.
absl::StatusOr<BenchResult> BenchFromJson(const nlohmann::json& document);

// Combines the shards of one matrix (same matrix, host kind and shard count; no
// slice twice). Missing slices leave the result incomplete, with a warning. A refusal
// names the two parts and the field that differs ("matrix.ops: 10 in 'a.json', 20 in
// 'b.json'"); `names` are the parts' names (their files), "result N" where missing.
absl::StatusOr<BenchResult> MergeResults(const std::vector<BenchResult>& parts,
                                         const std::vector<std::string>& names = {});

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_RESULTS_H_
