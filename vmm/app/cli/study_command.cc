// `sigvisor study dr7|pda|cerr|dequeue|all|tramp`: each seed's experiment, its table
// and the VM-level figures, with a verdict against the seed per figure; `pvsig`: the
// baseline against signal=pv and where offloading the signal frame wins.
#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/bench/kvm_target.h"
#include "vmm/app/bench/progress.h"
#include "vmm/app/bench/runner.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/cli/study_linux_column.h"
#include "vmm/app/study/linux_column.h"
#include "vmm/app/study/study.h"

namespace sigvisor::cli {

// `sigvisor help`'s line for `study`, and what `sigvisor help study` prints above
// the flags (StudyFlags, options.cc).
constexpr CommandHelp kStudyHelp{
    "reproduce a seed's experiment: dr7, pda, cerr, dequeue, all, or tramp (MIPS); or pvsig "
    "(does signal=pv win here), ipi (a signal to another CPU by IPI way)",
    "Runs one seed's experiment (docs/seeds.md, 000-003) as a bench of the baseline\n"
    "against the build with the seed's change, prints a table shaped like the seed's,\n"
    "then the VM-level figures (time, kernel instructions, exits and traps per op; the\n"
    "kernel's text size, the signal object's size and stack, bloat-o-meter) and for each\n"
    "whether it goes the seed's way; one that goes against it is marked FINDING.\n"
    "  dr7      seed 000: divzero, dr7=always vs lazy, traps off and patch\n"
    "  pda      seed 001: pipe_rw, pda=gs vs direct, traps off and patch, kernel text\n"
    "  cerr     seed 002: lat_sig sig inst/sig hndl, uaccess=err_or vs cerr, size, stack\n"
    "  dequeue  seed 003: sigpingpong mean/stddev, dequeue=copy vs pointer, bloat-o-meter\n"
    "  all      the four, in that order (a minute or two here)\n"
    "  pvsig    no seed: divzero, baseline vs signal=pv (the VMM writes and reads back\n"
    "           the signal frame: fewer kernel instructions, two exits more per signal),\n"
    "           trap off: each build per signal, the break-even (kernel instructions saved\n"
    "           per exit added) and which build wins on this host; not part of all\n"
    "  ipi      no seed: xcpu_pingpong on smp=on, two vCPUs, by IPI way (x2apic, xapic,\n"
    "           pv), trap off: per cross-CPU signal each vCPU's exits and IPIs received,\n"
    "           the time and its ratio to the one-vCPU signal's (a second bench:\n"
    "           sigpingpong on the baseline); not part of all\n"
    "  tramp    seed 004 on the MIPS interpreter (no KVM): lat_sig sig hndl, tramp=stack\n"
    "           vs vdso, on 1 core and on --cores N (default 4): instructions, I-cache\n"
    "           lines flushed, IPIs and modelled time per signal, and wall time; on its own\n"
    "--ops, --repetitions and --traps override every chosen study's own.\n"
    "--linux KERNEL adds each seed study's Linux column: the seed's figures counted in one\n"
    "traced op of its workload in a stock Linux kernel (its DR7 writes, %gs prefixes,\n"
    "frame set-up, dequeue), beside the two builds' (docs/bench-and-studies.md).\n"
    "\nExamples:\n"
    "  sigvisor study all\n"
    "  sigvisor study dr7 --repetitions 20 --svg dr7.svg\n"
    "  sigvisor study pvsig\n"
    "  sigvisor study ipi --ops 50 --repetitions 5\n"
    "  sigvisor study cerr dequeue --json > studies.json\n"
    "  sigvisor study dr7 --linux /boot/vmlinuz-6.1.0-57-amd64\n"
    "  sigvisor study tramp --cores 8",
};

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
  // --linux: the seed studies' Linux column, its kernel loaded (and refused) up front.
  std::optional<LinuxColumnTracer> linux_tracer;
  if (!options.linux_kernel.empty()) {
    if (std::none_of(studies->begin(), studies->end(), [](const study::StudyDef* s) {
          return !study::LinuxPhasesFor(s->name).empty();
        })) {
      return ReportError(
          "--linux adds a Linux column to the seed studies (dr7, pda, cerr, "
          "dequeue); pvsig has none");
    }
    absl::StatusOr<LinuxColumnTracer> loaded =
        LinuxColumnTracer::Load(options.linux_kernel, options);
    if (!loaded.ok()) return ReportError(loaded.status());
    linux_tracer = *std::move(loaded);
  }
  absl::StatusOr<BenchOutput> output = OpenOutput(options.output);
  if (!output.ok()) return ReportError(output.status());
  if (absl::Status s = CheckRunLimits(options.runs.timeout, options.runs.memory_mib); !s.ok()) {
    return ReportError(s);
  }
  absl::StatusOr<std::optional<uint64_t>> ops = ParseCountFlag("ops", options.ops, launch::kMaxOps);
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
  // A study's reference bench (ipi's one-vCPU signal), run after its own; nullopt for
  // the others.
  std::vector<std::optional<bench::Matrix>> references;
  size_t total_runs = 0;
  for (const study::StudyDef* s : *studies) {
    absl::StatusOr<bench::Matrix> matrix =
        study::StudyMatrix(*s, *ops, repetitions, host->traps, options.runs.memory_mib);
    if (!matrix.ok()) return ReportError(matrix.status());
    absl::StatusOr<std::optional<bench::Matrix>> reference = study::ReferenceMatrix(*s, *matrix);
    if (!reference.ok()) return ReportError(reference.status());
    total_runs += matrix->runs() + (*reference ? (*reference)->runs() : 0);
    matrices.push_back(*std::move(matrix));
    references.push_back(*std::move(reference));
  }

  // Every target up front: nothing after the first run can fail to start.
  absl::StatusOr<std::vector<InjectionSpec>> injections = ParseInjectionSpecs(options.runs.inject);
  if (!injections.ok()) return ReportError(injections.status());
  std::vector<bench::KvmBenchTarget> targets;
  std::vector<std::optional<bench::KvmBenchTarget>> reference_targets;
  for (size_t i = 0; i < matrices.size(); ++i) {
    absl::StatusOr<bench::KvmBenchTarget> target = bench::KvmBenchTarget::Create(
        host->kvm, matrices[i], host->info.cpl0_emulated, SettingsFrom(options.runs, nullptr));
    if (!target.ok()) return ReportError(target.status());
    target->SetInjection(*injections, options.runs.seed);
    targets.push_back(*std::move(target));
    reference_targets.emplace_back();
    if (!references[i]) continue;
    absl::StatusOr<bench::KvmBenchTarget> reference = bench::KvmBenchTarget::Create(
        host->kvm, *references[i], host->info.cpl0_emulated, SettingsFrom(options.runs, nullptr));
    if (!reference.ok()) return ReportError(reference.status());
    reference->SetInjection(*injections, options.runs.seed);
    reference_targets.back() = *std::move(reference);
  }

  // A study whose answer depends on this host's costs (pvsig's crossover) gets
  // `sigvisor probe`'s exit round trip, measured here first (~25 short VMs).
  study::StudyHostCosts costs;
  if (std::any_of(studies->begin(), studies->end(),
                  [](const study::StudyDef* s) { return s->uses_host_costs; })) {
    absl::StatusOr<ProbeReport> probe = RunProbe(host->kvm);
    if (!probe.ok()) return ReportError(probe.status());
    for (const MechanismResult& m : probe->mechanisms) {
      if (m.name == "io_exit" && m.works) costs.exit_round_trip_ns = m.round_trip_ns;
    }
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
    std::optional<bench::BenchResult> reference;
    if (references[i] && !bench::InterruptRequested()) {
      const bench::KvmBenchTarget* ref_target = &*reference_targets[i];
      runner.on_progress = progress.Callback(
          *references[i], absl::StrFormat("study %s: %s", s.name, s.reference_workload));
      reference = bench::RunMatrix(
          *references[i], [&](const bench::RunSpec& spec) { return ref_target->Run(spec); },
          runner);
      progress.Finish();
    }
    // The text says which injections every run made: the figures include them.
    reports.push_back(study::AnalyzeStudy(
        s, std::move(result), {options.runs.inject, options.runs.seed},
        s.uses_host_costs ? costs : study::StudyHostCosts{}, std::move(reference)));
    if (linux_tracer && !study::LinuxPhasesFor(s.name).empty() && !bench::InterruptRequested()) {
      study::AddLinuxColumn(
          reports.back(),
          linux_tracer->Column(s.name, matrices[i].variants[0].name, matrices[i].variants[1].name,
                               host->kvm, host->info));
    }
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
  if (!WriteSvg(*output, study::StudiesToSvg(reports))) return kExitResultLost;
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
