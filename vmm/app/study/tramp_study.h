// `sigvisor study tramp`: seed 004 (docs/seeds.md) on the MIPS interpreter.
// In 2009 MIPS Linux moved its signal-return trampolines from the user stack, where
// the kernel wrote `li v0, __NR_rt_sigreturn; syscall` for every signal and then had
// to flush those lines from the I-cache of every core (by IPI), into a vdso page:
// lmbench's signal handler overhead fell from 14.5 to 7.9 us. The study runs lmbench's
// `lat_sig catch` (the lat_sig workload's sig_hndl phase) on the bundled MIPS kernel
// with tramp=stack and tramp=vdso, on one core and on several, and reports per signal
// the instructions, exceptions, I-cache lines flushed and IPIs, the fetches from and
// writes to the VMM's vdso page (all exact), the modelled time (arch/mips/vmm/
// cost_model.h) and the interpreter's wall time.
#ifndef SIGVISOR_VMM_APP_STUDY_TRAMP_STUDY_H_
#define SIGVISOR_VMM_APP_STUDY_TRAMP_STUDY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vmm/sandbox/seccomp_filter.h"

namespace sigvisor::study {

inline constexpr const char* kTrampStudySchema = "sigvisor.study_tramp/1";

struct TrampStudyOptions {
  uint64_t ops = 5000;         // signals per run (the sig_hndl phase)
  uint32_t repetitions = 5;    // runs per row: counts must agree, wall time is the median
  std::vector<int> cores = {1, 4};
  absl::Duration timeout = absl::Seconds(60);
  std::optional<SandboxPolicy> sandbox;
  // Called before each run: (run index from 0, runs in all, a one-line label).
  std::function<void(size_t, size_t, const std::string&)> on_run;
};

// One row: a build (tramp=stack or vdso) on a number of cores.
struct TrampRow {
  std::string variant;  // "baseline" (tramp=stack) or "tramp=vdso"
  std::string tramp;    // "stack" or "vdso"
  int cores = 1;
  uint64_t ops = 0;
  uint32_t runs = 0;        // that completed
  bool counts_agree = true;  // every run counted the same
  // Per signal, over all cores (exact: the interpreter counts them).
  double instructions = 0;
  double exceptions = 0;
  double icache_lines_flushed = 0;
  double ipis_sent = 0;
  // The VMM's vdso page (arch/mips/vmm/vdso_page.h): I-cache line fetches from it
  // (1 with tramp=vdso: the one trampoline each signal returns through; 0 with
  // tramp=stack) and stores to it (refused; 0 in this workload).
  double vdso_fetches = 0;
  double vdso_writes = 0;
  double modelled_cycles = 0;
  double modelled_us = 0;  // modelled_cycles at the cost model's clock
  // Per signal, the interpreter's wall time: median, min, max over the runs.
  double wall_us_median = 0, wall_us_min = 0, wall_us_max = 0;
  double instructions_per_second = 0;  // the interpreter's speed over the runs (wall)
  // The page in the runs: its guest-physical address, the distinct host pages behind
  // the cores (1: one page shared by every core), and whether every run left the
  // VMM's copy unchanged.
  uint64_t vdso_address = 0;
  int vdso_host_pages = 0;
  bool vdso_intact = false;
  std::string failure;  // why a run failed ("" when all ran)
};

struct TrampStudyReport {
  TrampStudyOptions options;
  std::vector<TrampRow> rows;  // per core count: stack, then vdso
  bool complete() const;
  std::string text;            // the table, the seed's figures and the verdicts
};

absl::StatusOr<TrampStudyReport> RunTrampStudy(const TrampStudyOptions& options);

nlohmann::ordered_json TrampStudyToJson(const TrampStudyReport& report);

}  // namespace sigvisor::study

#endif  // SIGVISOR_VMM_APP_STUDY_TRAMP_STUDY_H_
