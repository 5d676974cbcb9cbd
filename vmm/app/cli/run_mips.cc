// `sigvisor run --arch mips`: boots an ELF32 MIPS image on the interpreter
// (arch/mips/vmm) and prints the same text or JSON report as a KVM run, with the
// interpreter's counters as its stats and the cost model's modelled time and the
// machine's vdso page after it.
#include <cstdio>
#include <fstream>
#include <iterator>

#include "absl/strings/str_format.h"
#include "arch/mips/vmm/cost_model.h"
#include "arch/mips/vmm/mips_machine.h"
#include "arch/mips/vmm/vdso_page.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/run_interrupt.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/base/clock.h"
#include "vmm/report/json_report.h"
#include "vmm/report/text_report.h"

namespace sigvisor::cli {
namespace {

// "modelled 123 cycles = 0.000000246 s at 500 MHz (...)": the cost model is printed
// with every figure it makes (docs/mips-platform.md, "Cost model").
std::string ModelledLine(const mips::MipsMachineReport& report) {
  using mips::CostModel;
  return absl::StrFormat(
      "modelled time: %d cycles = %.9f s at %d MHz (cycles = instructions + %d per exception "
      "+ %d per flushed I-cache line + %d per IPI sent); interpreter %.1f M guest "
      "instructions/s wall, %.1f M per CPU second\n",
      report.total.modelled_cycles(), report.modelled_seconds, CostModel::kClockHz / 1000000,
      CostModel::kCyclesPerException, CostModel::kCyclesPerFlushedLine,
      CostModel::kCyclesPerIpiSent, report.instructions_per_second / 1e6,
      report.instructions_per_cpu_second / 1e6);
}

// "vdso page: the VMM's at physical 0x1f300000 (...)": whether the guest had the
// machine's page, and what it did with it (docs/mips-platform.md, "The vdso page").
std::string VdsoLine(const mips::MipsMachineReport& report) {
  if (!report.vdso.supplied) {
    return "vdso page: none supplied (the guest kernel maps its own copy)\n";
  }
  return absl::StrFormat(
      "vdso page: the VMM's at physical %#x (%d host page%s behind %d core%s, %s); %d "
      "fetch%s from it, %d write%s refused\n",
      report.vdso.address, report.vdso.host_pages, report.vdso.host_pages == 1 ? "" : "s",
      report.cores.size(), report.cores.size() == 1 ? "" : "s",
      report.vdso.intact ? "unchanged" : "CHANGED", report.total.vdso_fetches,
      report.total.vdso_fetches == 1 ? "" : "es", report.total.vdso_writes,
      report.total.vdso_writes == 1 ? "" : "s");
}

uint64_t Stat(const StatsSnapshot& stats, const char* name) {
  auto it = stats.find(name);
  return it == stats.end() ? 0 : it->second;
}

// The `mips.vdso` member: the page, the whole run's counts, and each phase's, in
// total and per op (net of the markers, as every phase count: the markers never
// touch the page, so these are exact).
nlohmann::ordered_json VdsoToJson(const mips::MipsMachineReport& report,
                                  const std::vector<PhaseResult>& phases) {
  nlohmann::ordered_json per_phase = nlohmann::ordered_json::array();
  for (const PhaseResult& phase : phases) {
    const uint64_t fetches = Stat(phase.kvm_stats, "vdso_fetches");
    const uint64_t writes = Stat(phase.kvm_stats, "vdso_writes");
    const double ops = static_cast<double>(phase.ops);
    per_phase.push_back({{"name", phase.name},
                         {"ops", phase.ops},
                         {"fetches", fetches},
                         {"writes", writes},
                         {"per_op",
                          {{"fetches", phase.ops ? static_cast<double>(fetches) / ops : 0.0},
                           {"writes", phase.ops ? static_cast<double>(writes) / ops : 0.0}}}});
  }
  return {
      {"supplied", report.vdso.supplied},
      {"address", report.vdso.supplied ? nlohmann::ordered_json(absl::StrFormat(
                                             "%#x", report.vdso.address))
                                       : nlohmann::ordered_json(nullptr)},
      {"bytes", mips::VdsoPage::kBytes},
      {"host_pages", report.vdso.host_pages},
      {"intact", report.vdso.supplied ? nlohmann::ordered_json(report.vdso.intact)
                                      : nlohmann::ordered_json(nullptr)},
      {"fetches", report.total.vdso_fetches},
      {"writes", report.total.vdso_writes},
      {"phases", per_phase},
  };
}

}  // namespace

int RunMips(const RunOptions& options, uint64_t start_ns) {
  absl::StatusOr<std::string> cmdline =
      launch::GuestWords(launch::KernelDialect::kBundled, options.workload, options.ops,
                         options.warmup, options.cmdline);
  if (!cmdline.ok()) return ReportError(cmdline.status());
  absl::StatusOr<launch::LoadedMipsImage> image =
      launch::LoadMipsImage(options.image, options.variant);
  if (!image.ok()) return ReportError(image.status());
  if (!image->variant.empty()) {  // the bundled kernel
    if (absl::Status s = launch::CheckBundledKernelWords(options.cmdline); !s.ok()) {
      return ReportError(s);
    }
  }

  launch::ConsoleEcho console(RunConsoleStream(options));
  mips::MipsMachineConfig config = launch::MipsMachineConfigFor(
      RunSettingsFor(options, console), *cmdline, static_cast<int>(options.cores));
  // Ctrl-C or SIGTERM stops the guest and reports the run as interrupted
  // (run_interrupt.h); a second one ends the process at once.
  InstallRunInterruptHandler();
  config.session.interrupt = RunInterruptFlag();
  absl::StatusOr<mips::MipsMachineReport> report = mips::BootAndRun(image->elf, config);
  console.EndLine();
  if (!report.ok()) return ReportError(report.status());

  RunRecord record;
  record.image = image->label;
  record.variant = image->variant;
  record.variant_settings = image->variant_settings;
  record.cmdline = *cmdline;
  record.host = {kMipsInterpreterHost, false,
                 absl::StrFormat("%d core%s", config.cores, config.cores == 1 ? "" : "s")};
  record.stats_source = StatsSource::kMipsInterpreter;
  // The interpreter sees every instruction: nothing to trap.
  record.trap = {TrapMechanism::kOff, "", 0};
  record.result = std::move(report->result);
  record.setup_ns = report->setup_ns;
  record.wall_ns = MonotonicNs() - start_ns;

  if (options.json) {
    nlohmann::ordered_json doc = RunRecordToJson(record);
    doc["mips"] = {
        {"cores", config.cores},
        {"modelled_cycles", report->total.modelled_cycles()},
        {"modelled_seconds", report->modelled_seconds},
        {"cost_model",
         {{"clock_hz", mips::CostModel::kClockHz},
          {"cycles_per_instruction", mips::CostModel::kCyclesPerInstruction},
          {"cycles_per_exception", mips::CostModel::kCyclesPerException},
          {"cycles_per_flushed_line", mips::CostModel::kCyclesPerFlushedLine},
          {"cycles_per_ipi_sent", mips::CostModel::kCyclesPerIpiSent}}},
        {"instructions_per_second", report->instructions_per_second},
        {"instructions_per_cpu_second", report->instructions_per_cpu_second},
        {"vdso", VdsoToJson(*report, record.result.phases)},
    };
    std::printf("%s\n", WithBuildInfo(doc).dump(2).c_str());
  } else {
    std::printf("%s%s%s", FormatRunReport(record).c_str(), ModelledLine(*report).c_str(),
                VdsoLine(*report).c_str());
  }
  return ReportRunEnd(record.result, !record.variant.empty());
}

}  // namespace sigvisor::cli
