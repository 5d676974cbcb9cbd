// `sigvisor study tramp`: seed 004 on the MIPS interpreter (vmm/app/study/tramp_study.h).
// It needs no KVM, so it runs apart from the KVM studies.
#include <cstdio>

#include "absl/strings/str_format.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/flag_table.h"
#include "vmm/app/study/tramp_study.h"
#include "vmm/base/clock.h"

namespace sigvisor::cli {

namespace {

// What study tramp, on the MIPS interpreter, has no use for.
constexpr std::string_view kKvmStudiesOnly[] = {"inject", "seed", "traps", "kvm", "memory"};

}  // namespace

int StudyTrampCommand(const StudyOptions& flags) {
  if (!flags.output.svg.empty() || flags.output.csv) {
    return ReportError("study tramp prints text or --json (no --csv, no --svg)");
  }
  if (std::string flag = FirstGiven(flags, kKvmStudiesOnly); !flag.empty()) {
    return ReportError(absl::StrFormat(
        "%s is for the KVM studies; study tramp runs on the MIPS interpreter", flag));
  }
  if (flags.runs.timeout <= absl::ZeroDuration()) return ReportError("--timeout must be positive");
  absl::StatusOr<std::optional<uint64_t>> ops = ParseCountFlag("ops", flags.ops, launch::kMaxOps);
  if (!ops.ok()) return ReportError(ops.status());
  absl::StatusOr<std::optional<uint64_t>> reps =
      ParseCountFlag("repetitions", flags.repetitions, 1000);
  if (!reps.ok()) return ReportError(reps.status());
  if (flags.cores < 1 || flags.cores > 32) return ReportError("--cores: give 1 to 32");

  study::TrampStudyOptions options;
  if (*ops) options.ops = **ops;
  if (*reps) options.repetitions = static_cast<uint32_t>(**reps);
  // One core, and several: --cores N (default 4; 1 asks for the default too).
  options.cores = {1, flags.cores > 1 ? static_cast<int>(flags.cores) : 4};
  options.timeout = flags.runs.timeout;
  if (!flags.runs.no_sandbox) options.sandbox = SandboxPolicy{};
  // Progress on stderr, once the study has run for a second (a short one stays quiet).
  const uint64_t start_ns = MonotonicNs();
  bool progress_shown = false;
  options.on_run = [start_ns, &progress_shown](size_t index, size_t total,
                                               const std::string& label) {
    const double elapsed = static_cast<double>(MonotonicNs() - start_ns) / 1e9;
    if (elapsed < 1.0) return;
    std::fprintf(stderr, "\rstudy tramp: run %zu/%zu (%s), %.1f s ", index + 1, total,
                 label.c_str(), elapsed);
    std::fflush(stderr);
    progress_shown = true;
  };
  absl::StatusOr<study::TrampStudyReport> report = study::RunTrampStudy(options);
  if (progress_shown) std::fprintf(stderr, "\n");
  if (!report.ok()) return ReportError(report.status());
  if (flags.output.json) {
    std::printf("%s\n", WithBuildInfo(study::TrampStudyToJson(*report)).dump(2).c_str());
  } else {
    std::fputs(report->text.c_str(), stdout);
  }
  if (!report->complete()) {
    std::fprintf(stderr, "sigvisor: INCOMPLETE: a run failed or counts differed between runs\n");
    return 1;
  }
  return 0;
}

}  // namespace sigvisor::cli
