// `sigvisor bench`, `sigvisor study` and `sigvisor merge` (vmm/bench, vmm/app/study),
// and what they parse alike.
#ifndef SIGVISOR_VMM_APP_CLI_BENCH_COMMANDS_H_
#define SIGVISOR_VMM_APP_CLI_BENCH_COMMANDS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "vmm/app/bench/kvm_target.h"
#include "vmm/app/bench/results.h"
#include "vmm/app/cli/options.h"
#include "vmm/app/cli/result_output.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/kvm/kvm.h"
#include "vmm/run/trap_mechanism.h"

namespace sigvisor::cli {

// `study tramp` (study_tramp_command.cc), which StudyCommand hands over to.
int StudyTrampCommand(const StudyOptions& options);

enum class OutputFormat { kText, kJson, kCsv };

// What bench, study and merge read from their flags.
struct BenchOutput {
  OutputFormat format = OutputFormat::kText;
  std::string svg_path;                // empty: no chart
  std::unique_ptr<ResultFile> svg;     // created up front, written at the end
};

// Prints a bench result in the chosen format (and the chart); the exit status: 0
// when complete, 1 when runs failed or are missing, 125 when the chart could not be
// written (result_output.h; stdout is checked at the end of main).
int PrintBench(const bench::BenchResult& result, BenchOutput& output);

// --json / --csv (not both) and --svg FILE, which is opened at once so that a bad
// path fails before anything runs.
absl::StatusOr<BenchOutput> OpenOutput(const OutputOptions& options);

// Writes `svg` to the file OpenOutput created (result_output.h); false (after one
// line `sigvisor: error: --svg '...': the chart was not written: ...`) when it fails.
bool WriteSvg(BenchOutput& output, const std::string& svg);

// A count flag (--ops, --repetitions) by the one rule for counts (launch::ParseCount):
// nullopt when empty, an error unless a whole number from 1 to `max`.
absl::StatusOr<std::optional<uint64_t>> ParseCountFlag(const char* name, const std::string& value,
                                                       uint64_t max);

// What the runs need from the host: KVM, what kind of host it is, and --traps (or
// `defaults` when it is not given) resolved into mechanisms (auto to what it takes,
// hw-gd checked), duplicates refused.
struct BenchHost {
  KvmSystem kvm;
  HostInfo info;
  std::vector<TrapMechanism> traps;  // empty when --traps was empty and `defaults` too
};
absl::StatusOr<BenchHost> OpenBenchHost(const std::string& kvm_path,
                                        const std::string& traps_flag,
                                        const std::vector<TrapRequest>& defaults);

// --timeout and --memory (of bench or study), checked.
absl::Status CheckRunLimits(absl::Duration timeout, uint32_t memory_mib);

// What bench's runs start from besides a boot (docs/snapshots.md): --restore (snapshots
// of its own), --snapshots DIR (those saved in DIR) or --save-snapshots DIR (save them
// and run nothing), at most one of them; refused with what they cannot go with (--peer,
// --inject) and, for --save-snapshots, with every flag that has no use when nothing runs.
absl::Status CheckSnapshotFlags(const BenchOptions& options);

// Which snapshots a bench with --traps `traps_flag` restores (bench::SnapshotKindsFor),
// from the names alone, so before the host resolves them (auto is never pv); empty: the
// default mechanisms, which are not pv.
bench::SnapshotKinds SnapshotKindsOf(const std::string& traps_flag);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_BENCH_COMMANDS_H_
