// `sigvisor bench`: a matrix of workloads x kernel variants x trap mechanisms x
// repetitions in one process, the variants interleaved.
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "vmm/bench/bench_format.h"
#include "vmm/bench/kvm_run.h"
#include "vmm/bench/progress.h"
#include "vmm/bench/runner.h"
#include "vmm/cli/bench_commands.h"
#include "vmm/cli/command.h"
#include "vmm/cli/flags.h"

namespace sigvisor::cli {

constexpr uint64_t kDefaultOps = 100;
constexpr uint32_t kDefaultRepetitions = 5;
constexpr const char* kDefaultVariants = "baseline;accelerated";

int PrintBench(const bench::BenchResult& result, BenchOutput& output) {
  switch (output.format) {
    case OutputFormat::kJson:
      std::printf("%s\n", bench::BenchToJson(result).dump(2).c_str());
      break;
    case OutputFormat::kCsv:
      std::printf("%s", bench::FormatBenchCsv(result).c_str());
      break;
    case OutputFormat::kText:
      std::printf("%s", bench::FormatBenchText(result).c_str());
      break;
  }
  std::fflush(stdout);
  if (!WriteSvg(output, bench::FormatBenchSvg(result))) return 1;
  if (!result.complete()) {
    std::fprintf(stderr, "sigvisor: %s\n", bench::CompletenessLine(result).c_str());
    return 1;
  }
  return 0;
}

int BenchCommand(std::span<char* const> args) {
  if (!args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor bench` takes no argument '%s' (see --help)", args[0]));
  }
  absl::StatusOr<BenchOutput> output = ParseOutput();
  if (!output.ok()) return ReportError(output.status());
  absl::StatusOr<RunLimits> limits = ParseRunLimits();
  if (!limits.ok()) return ReportError(limits.status());

  bench::Matrix matrix;
  const std::string workloads = absl::GetFlag(FLAGS_workloads);
  if (workloads.empty()) {
    for (std::string_view w : bench::DefaultWorkloads()) matrix.workloads.emplace_back(w);
  } else {
    absl::StatusOr<std::vector<std::string>> list = bench::ParseWorkloadList(workloads);
    if (!list.ok()) return ReportError(list.status());
    matrix.workloads = *std::move(list);
  }
  const std::string variants = absl::GetFlag(FLAGS_variants);
  absl::StatusOr<std::vector<bench::VariantInfo>> variant_list =
      bench::ParseVariantList(variants.empty() ? kDefaultVariants : variants);
  if (!variant_list.ok()) return ReportError(variant_list.status());
  matrix.variants = *std::move(variant_list);
  absl::StatusOr<std::optional<uint64_t>> ops = ParseCountFlag("ops", absl::GetFlag(FLAGS_ops), 1u << 24);
  if (!ops.ok()) return ReportError(ops.status());
  matrix.ops = ops->value_or(kDefaultOps);
  absl::StatusOr<std::optional<uint64_t>> reps =
      ParseCountFlag("repetitions", absl::GetFlag(FLAGS_repetitions), 100000);
  if (!reps.ok()) return ReportError(reps.status());
  matrix.repetitions = static_cast<uint32_t>(reps->value_or(kDefaultRepetitions));
  matrix.memory_mib = limits->memory_mib;
  bench::Shard shard;
  if (const std::string text = absl::GetFlag(FLAGS_shard); !text.empty()) {
    absl::StatusOr<bench::Shard> parsed = bench::ParseShard(text);
    if (!parsed.ok()) return ReportError(parsed.status());
    shard = *parsed;
  }

  absl::StatusOr<BenchHost> host = OpenBenchHost(absl::GetFlag(FLAGS_traps), {"off", "auto"});
  if (!host.ok()) return ReportError(host.status());
  matrix.traps = host->traps;
  absl::StatusOr<bench::KvmBenchTarget> target =
      bench::KvmBenchTarget::Create(host->kvm, matrix, host->info.cpl0_emulated, limits->timeout);
  if (!target.ok()) return ReportError(target.status());

  const bench::RunRange range = bench::ShardRange(matrix.runs(), shard);
  bench::InstallInterruptHandler();
  bench::ProgressPrinter progress(range.end - range.begin);
  bench::RunnerOptions options;
  options.shard = shard;
  options.host = {host->info.kind, host->info.cpl0_emulated};
  options.on_progress = progress.Callback(matrix, "bench");
  options.stop_requested = bench::InterruptRequested;
  bench::BenchResult result = bench::RunMatrix(
      matrix, [&](const bench::RunSpec& spec) { return target->Run(spec); }, options);
  progress.Finish();
  return PrintBench(result, *output);
}

}  // namespace sigvisor::cli
