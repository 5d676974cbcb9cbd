// `sigvisor study dr7|pda|cerr|dequeue|all|tramp`: each seed's experiment, its table
// and the VM-level figures, with a verdict against the seed per figure.
#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/bench/kvm_target.h"
#include "vmm/app/bench/progress.h"
#include "vmm/app/bench/runner.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/study/study.h"

namespace sigvisor::cli {

int StudyCommand(const StudyOptions& options) {
  const std::vector<std::string>& names = options.args;
  if (std::find(names.begin(), names.end(), "tramp") != names.end()) {
    if (names.size() != 1) {
      return ReportError("study tramp runs on the MIPS interpreter, the others on KVM: run "
                         "`sigvisor study tramp` on its own");
    }
    return StudyTrampCommand(options);
  }
  // vmm/app/study knows the KVM studies; tramp, on the MIPS interpreter, is handled above,
  // so the list of choices is made here, with it.
  std::vector<std::string> choices;
  for (const study::StudyDef& def : study::Studies()) choices.emplace_back(def.name);
  choices.push_back("all");
  const std::string listed =
      absl::StrFormat("%s, or tramp (seed 004, MIPS)", absl::StrJoin(choices, ", "));
  if (names.empty()) return ReportError("`sigvisor study` needs a study: " + listed);
  for (const std::string& name : names) {
    if (name != "all" && study::FindStudy(name) == nullptr) {
      return ReportError(absl::StrFormat("no study '%s' (give %s)", name, listed));
    }
  }
  if (options.Given("cores")) {
    return ReportError("--cores is for study tramp (the MIPS interpreter's cores); the KVM "
                       "studies run on one vCPU");
  }
  absl::StatusOr<std::vector<const study::StudyDef*>> studies = study::ParseStudyNames(names);
  if (!studies.ok()) return ReportError(studies.status());
  absl::StatusOr<BenchOutput> output = OpenOutput(options.output);
  if (!output.ok()) return ReportError(output.status());
  if (absl::Status s = CheckRunLimits(options.runs.timeout, options.runs.memory_mib); !s.ok()) {
    return ReportError(s);
  }
  absl::StatusOr<std::optional<uint64_t>> ops = ParseCountFlag("ops", options.ops, 1u << 24);
  if (!ops.ok()) return ReportError(ops.status());
  absl::StatusOr<std::optional<uint64_t>> reps =
      ParseCountFlag("repetitions", options.repetitions, 100000);
  if (!reps.ok()) return ReportError(reps.status());
  std::optional<uint32_t> repetitions;
  if (*reps) repetitions = static_cast<uint32_t>(**reps);

  // Each study's own trap mechanisms unless --traps says otherwise.
  absl::StatusOr<BenchHost> host = OpenBenchHost(options.runs.kvm, options.traps, {});
  if (!host.ok()) return ReportError(host.status());
  std::vector<bench::Matrix> matrices;
  size_t total_runs = 0;
  for (const study::StudyDef* s : *studies) {
    absl::StatusOr<bench::Matrix> matrix =
        study::StudyMatrix(*s, *ops, repetitions, host->traps, options.runs.memory_mib);
    if (!matrix.ok()) return ReportError(matrix.status());
    total_runs += matrix->runs();
    matrices.push_back(*std::move(matrix));
  }

  // Every target up front: nothing after the first run can fail to start.
  absl::StatusOr<std::vector<InjectionSpec>> injections = ParseInjectionSpecs(options.runs.inject);
  if (!injections.ok()) return ReportError(injections.status());
  std::vector<bench::KvmBenchTarget> targets;
  for (const bench::Matrix& matrix : matrices) {
    absl::StatusOr<bench::KvmBenchTarget> target = bench::KvmBenchTarget::Create(
        host->kvm, matrix, host->info.cpl0_emulated, SettingsFrom(options.runs, nullptr));
    if (!target.ok()) return ReportError(target.status());
    target->SetInjection(*injections, options.runs.seed);
    targets.push_back(*std::move(target));
  }

  bench::InstallInterruptHandler();
  bench::ProgressPrinter progress(total_runs);
  std::vector<study::StudyReport> reports;
  for (size_t i = 0; i < matrices.size() && !bench::InterruptRequested(); ++i) {
    const study::StudyDef& s = *(*studies)[i];
    const bench::KvmBenchTarget* target = &targets[i];
    bench::RunnerOptions runner;
    runner.host = {host->info.kind, host->info.cpl0_emulated};
    runner.on_progress = progress.Callback(matrices[i], absl::StrFormat("study %s", s.name));
    runner.stop_requested = bench::InterruptRequested;
    bench::BenchResult result = bench::RunMatrix(
        matrices[i], [&](const bench::RunSpec& spec) { return target->Run(spec); }, runner);
    progress.Finish();
    reports.push_back(study::AnalyzeStudy(s, std::move(result)));
    if (output->format == OutputFormat::kText) {
      std::printf("%s%s", i ? "\n" : "", reports.back().text.c_str());
      std::fflush(stdout);
    }
  }
  std::vector<std::string> not_run;
  for (size_t i = reports.size(); i < studies->size(); ++i) not_run.emplace_back((*studies)[i]->name);
  if (output->format == OutputFormat::kJson) {
    std::printf("%s\n", WithBuildInfo(study::StudiesToJson(reports, not_run)).dump(2).c_str());
  } else if (output->format == OutputFormat::kCsv) {
    std::printf("%s", study::StudiesToCsv(reports).c_str());
  }
  std::fflush(stdout);
  if (!WriteSvg(*output, study::StudiesToSvg(reports))) return 1;
  bool complete = not_run.empty();
  for (const study::StudyReport& r : reports) complete = complete && r.complete();
  if (!complete) {
    std::fprintf(stderr, "sigvisor: INCOMPLETE: %d of %d studies ran to the end%s\n",
                 static_cast<int>(std::count_if(reports.begin(), reports.end(),
                                                [](const study::StudyReport& r) { return r.complete(); })),
                 static_cast<int>(studies->size()),
                 bench::InterruptRequested() ? " (interrupted)" : "");
    return 1;
  }
  return 0;
}

}  // namespace sigvisor::cli
