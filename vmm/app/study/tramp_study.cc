#include "vmm/app/study/tramp_study.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"
#include "arch/mips/vmm/cost_model.h"
#include "arch/mips/vmm/mips_elf.h"
#include "arch/mips/vmm/mips_machine.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/app/launch/run_settings.h"

namespace sigvisor::study {
namespace {

using mips::CostModel;

// The seed's figures: lmbench `lat_sig catch` on a MIPS SMP, before and after.
constexpr double kSeedBeforeUs = 14.5;
constexpr double kSeedAfterUs = 7.9;
constexpr const char* kPhase = "sig_hndl";
// The MIPS machine's own default, which the study's figures were taken with.
constexpr uint64_t kMemoryMib = 64;

struct Build {
  const char* variant;
  const char* tramp;
};
constexpr Build kBuilds[] = {{"baseline", "stack"}, {"tramp=vdso", "vdso"}};

// What one run measured in the sig_hndl phase (totals over its ops).
struct RunCounts {
  std::map<std::string, uint64_t> stats;
  uint64_t wall_ns = 0;
  uint64_t instructions_run = 0;  // the whole run's, for the interpreter's speed
  uint64_t run_ns = 0;
  mips::MipsVdsoReport vdso;
};

absl::StatusOr<RunCounts> RunOnce(const mips::MipsElfImage& image, int cores,
                                  const TrampStudyOptions& options) {
  const mips::MipsMachineConfig config = launch::MipsMachineConfigFor(
      {.memory_mib = kMemoryMib, .timeout = options.timeout, .sandbox = options.sandbox.has_value()},
      absl::StrFormat("workload=lat_sig ops=%d", options.ops), cores);
  absl::StatusOr<mips::MipsMachineReport> report = mips::BootAndRun(image, config);
  if (!report.ok()) return report.status();
  const RunResult& result = report->result;
  if (result.outcome != Outcome::kExited || result.exit_code != 0) {
    return absl::InternalError(absl::StrFormat("the guest ended with %s, status %d: %s",
                                               OutcomeName(result.outcome), result.exit_code,
                                               result.diagnosis));
  }
  for (const PhaseResult& phase : result.phases) {
    if (phase.name != kPhase) continue;
    if (phase.ops != options.ops) break;
    RunCounts counts;
    counts.stats = phase.kvm_stats;
    counts.wall_ns = phase.wall_ns;
    counts.instructions_run = report->total.instructions;
    counts.run_ns = result.run_ns;
    counts.vdso = report->vdso;
    return counts;
  }
  return absl::InternalError(absl::StrFormat("the guest reported no %s phase of %d ops", kPhase,
                                             options.ops));
}

uint64_t Stat(const RunCounts& counts, const char* name) {
  auto it = counts.stats.find(name);
  return it == counts.stats.end() ? 0 : it->second;
}

double PercentChange(double before, double after) {
  return before == 0 ? 0 : 100.0 * (after - before) / before;
}

std::string FormatReport(const TrampStudyReport& report) {
  const TrampStudyOptions& o = report.options;
  std::string out = absl::StrFormat(
      "study tramp (seed 004): signal trampolines moved from the user stack to a vdso page\n"
      "  MIPS32r2 on sigvisor's interpreter; lat_sig %s (kill self, handler, sigreturn), "
      "%d signals per run, %d run(s) per row\n"
      "  modelled at %d MHz: cycles = instructions + %d per exception + %d per flushed I-cache "
      "line + %d per IPI sent (arch/mips/vmm/cost_model.h)\n\n",
      kPhase, o.ops, o.repetitions, CostModel::kClockHz / 1000000, CostModel::kCyclesPerException,
      CostModel::kCyclesPerFlushedLine, CostModel::kCyclesPerIpiSent);
  absl::StrAppendFormat(&out, "  %-12s %5s %12s %10s %12s %6s %9s %9s %15s %11s %22s\n", "tramp",
                        "cores", "insns/sig", "exc/sig", "icache/sig", "IPIs", "vdso/sig",
                        "vdso wr", "modelled cyc", "modelled us", "wall us [min - max]");
  for (const TrampRow& row : report.rows) {
    if (!row.failure.empty()) {
      absl::StrAppendFormat(&out, "  %-12s %5d  failed: %s\n", row.tramp, row.cores, row.failure);
      continue;
    }
    absl::StrAppendFormat(
        &out, "  %-12s %5d %12.1f %10.2f %12.2f %6.2f %9.2f %9.2f %15.1f %11.3f %9.2f [%.2f - %.2f]%s\n",
        row.tramp, row.cores, row.instructions, row.exceptions, row.icache_lines_flushed,
        row.ipis_sent, row.vdso_fetches, row.vdso_writes, row.modelled_cycles, row.modelled_us,
        row.wall_us_median, row.wall_us_min, row.wall_us_max,
        row.counts_agree ? "" : "  (counts differ between runs)");
  }
  // Where vdso/sig comes from: the one page of every run (the same address in all).
  uint64_t vdso_address = 0;
  bool one_page = true, intact = true;
  for (const TrampRow& row : report.rows) {
    if (row.runs == 0) continue;
    vdso_address = row.vdso_address;
    one_page = one_page && row.vdso_host_pages == 1;
    intact = intact && row.vdso_intact;
  }
  absl::StrAppendFormat(
      &out,
      "  vdso/sig, vdso wr: I-cache line fetches from and stores to the VMM's vdso page at "
      "physical %#x; %s; %s\n",
      vdso_address,
      one_page ? "one host page behind all the cores of each run" : "NOT one host page per run",
      intact ? "unchanged by every run" : "CHANGED by a run");
  absl::StrAppendFormat(&out,
                        "\n  the seed (lmbench lat_sig catch, MIPS SMP, 2009): %.1f us -> %.1f us "
                        "(%+.0f%%)\n",
                        kSeedBeforeUs, kSeedAfterUs, PercentChange(kSeedBeforeUs, kSeedAfterUs));
  for (size_t i = 0; i + 1 < report.rows.size(); i += 2) {
    const TrampRow& stack = report.rows[i];
    const TrampRow& vdso = report.rows[i + 1];
    if (!stack.failure.empty() || !vdso.failure.empty()) continue;
    const bool faster = vdso.modelled_us < stack.modelled_us;
    absl::StrAppendFormat(
        &out,
        "  here, %d core%s: modelled %.3f -> %.3f us (%+.1f%%), wall %.2f -> %.2f us "
        "(%+.1f%%); I-cache lines flushed %.0f -> %.0f, IPIs %.0f -> %.0f and vdso page "
        "fetches %.0f -> %.0f per signal: %s\n",
        stack.cores, stack.cores == 1 ? "" : "s", stack.modelled_us, vdso.modelled_us,
        PercentChange(stack.modelled_us, vdso.modelled_us), stack.wall_us_median,
        vdso.wall_us_median, PercentChange(stack.wall_us_median, vdso.wall_us_median),
        stack.icache_lines_flushed, vdso.icache_lines_flushed, stack.ipis_sent, vdso.ipis_sent,
        stack.vdso_fetches, vdso.vdso_fetches,
        faster && vdso.icache_lines_flushed == 0 && vdso.ipis_sent == 0
            ? "the seed's way (no flush, no IPI, cheaper per signal)"
            : "NOT the seed's way");
  }
  out +=
      "  (the model has no cache misses, so what moves is the flush and the IPIs themselves; "
      "the seed's 45% also held the I-cache refills that a flush costs on real hardware)\n";
  return out;
}

}  // namespace

bool TrampStudyReport::complete() const {
  for (const TrampRow& row : rows) {
    if (!row.failure.empty() || !row.counts_agree) return false;
  }
  return !rows.empty();
}

absl::StatusOr<TrampStudyReport> RunTrampStudy(const TrampStudyOptions& options) {
  if (options.ops == 0 || options.repetitions == 0 || options.cores.empty()) {
    return absl::InvalidArgumentError("study tramp needs ops, repetitions and cores of at least 1");
  }
  std::vector<mips::MipsElfImage> images;
  for (const Build& build : kBuilds) {
    absl::StatusOr<const KernelVariant*> variant = ResolveVariant(build.variant, GuestArch::kMips);
    if (!variant.ok()) return variant.status();
    absl::StatusOr<mips::MipsElfImage> image = mips::MipsElfImage::Parse(
        std::vector<uint8_t>((*variant)->bytes.begin(), (*variant)->bytes.end()));
    if (!image.ok()) return image.status();
    images.push_back(*std::move(image));
  }

  TrampStudyReport report;
  report.options = options;
  const size_t total_runs = options.cores.size() * std::size(kBuilds) * options.repetitions;
  size_t run_index = 0;
  for (int cores : options.cores) {
    for (size_t b = 0; b < std::size(kBuilds); ++b) {
      TrampRow row;
      row.variant = kBuilds[b].variant;
      row.tramp = kBuilds[b].tramp;
      row.cores = cores;
      row.ops = options.ops;
      std::vector<RunCounts> runs;
      for (uint32_t r = 0; r < options.repetitions; ++r) {
        if (options.on_run) {
          options.on_run(run_index, total_runs,
                         absl::StrFormat("tramp=%s, %d core%s, run %d of %d", row.tramp, cores,
                                         cores == 1 ? "" : "s", r + 1, options.repetitions));
        }
        ++run_index;
        absl::StatusOr<RunCounts> counts = RunOnce(images[b], cores, options);
        if (!counts.ok()) {
          row.failure = std::string(counts.status().message());
          break;
        }
        runs.push_back(*std::move(counts));
      }
      row.runs = static_cast<uint32_t>(runs.size());
      if (!runs.empty()) {
        const RunCounts& first = runs.front();
        for (const RunCounts& run : runs) row.counts_agree = row.counts_agree && run.stats == first.stats;
        const double ops = static_cast<double>(options.ops);
        row.instructions = Stat(first, "instructions") / ops;
        row.exceptions = Stat(first, "exceptions") / ops;
        row.icache_lines_flushed = Stat(first, "icache_lines_flushed") / ops;
        row.ipis_sent = Stat(first, "ipis_sent") / ops;
        row.vdso_fetches = Stat(first, "vdso_fetches") / ops;
        row.vdso_writes = Stat(first, "vdso_writes") / ops;
        row.vdso_address = first.vdso.address;
        row.vdso_host_pages = first.vdso.host_pages;
        row.vdso_intact = true;
        row.modelled_cycles = Stat(first, "modelled_cycles") / ops;
        row.modelled_us = row.modelled_cycles / (CostModel::kClockHz / 1e6);
        std::vector<double> wall;
        uint64_t instructions = 0, run_ns = 0;
        for (const RunCounts& run : runs) {
          row.vdso_intact = row.vdso_intact && run.vdso.supplied && run.vdso.intact;
          wall.push_back(static_cast<double>(run.wall_ns) / 1000.0 / ops);
          instructions += run.instructions_run;
          run_ns += run.run_ns;
        }
        std::sort(wall.begin(), wall.end());
        row.wall_us_median = wall.size() % 2 ? wall[wall.size() / 2]
                                             : (wall[wall.size() / 2 - 1] + wall[wall.size() / 2]) / 2;
        row.wall_us_min = wall.front();
        row.wall_us_max = wall.back();
        row.instructions_per_second = run_ns ? 1e9 * static_cast<double>(instructions) / run_ns : 0;
      }
      report.rows.push_back(std::move(row));
    }
  }
  report.text = FormatReport(report);
  return report;
}

nlohmann::ordered_json TrampStudyToJson(const TrampStudyReport& report) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const TrampRow& row : report.rows) {
    rows.push_back({{"variant", row.variant},
                    {"tramp", row.tramp},
                    {"cores", row.cores},
                    {"ops", row.ops},
                    {"runs", row.runs},
                    {"counts_agree", row.counts_agree},
                    {"failure", row.failure.empty() ? nlohmann::ordered_json(nullptr)
                                                    : nlohmann::ordered_json(row.failure)},
                    {"per_signal",
                     {{"instructions", row.instructions},
                      {"exceptions", row.exceptions},
                      {"icache_lines_flushed", row.icache_lines_flushed},
                      {"ipis_sent", row.ipis_sent},
                      {"vdso_fetches", row.vdso_fetches},
                      {"vdso_writes", row.vdso_writes},
                      {"modelled_cycles", row.modelled_cycles},
                      {"modelled_us", row.modelled_us},
                      {"wall_us_median", row.wall_us_median},
                      {"wall_us_min", row.wall_us_min},
                      {"wall_us_max", row.wall_us_max}}},
                    {"instructions_per_second", row.instructions_per_second},
                    {"vdso_page", row.runs == 0 ? nlohmann::ordered_json(nullptr)
                                                 : nlohmann::ordered_json{
                                                       {"address", absl::StrFormat(
                                                                       "%#x", row.vdso_address)},
                                                       {"host_pages", row.vdso_host_pages},
                                                       {"intact", row.vdso_intact}}}});
  }
  return {
      {"schema", kTrampStudySchema},
      {"seed", "004"},
      {"complete", report.complete()},
      {"workload", "lat_sig"},
      {"phase", kPhase},
      {"ops", report.options.ops},
      {"repetitions", report.options.repetitions},
      {"cost_model",
       {{"clock_hz", CostModel::kClockHz},
        {"cycles_per_instruction", CostModel::kCyclesPerInstruction},
        {"cycles_per_exception", CostModel::kCyclesPerException},
        {"cycles_per_flushed_line", CostModel::kCyclesPerFlushedLine},
        {"cycles_per_ipi_sent", CostModel::kCyclesPerIpiSent}}},
      {"seed_figures_us", {{"before", kSeedBeforeUs}, {"after", kSeedAfterUs}}},
      {"rows", rows},
  };
}

}  // namespace sigvisor::study
