// `sigvisor probe`: what this host's KVM does, and what each trap mechanism costs.
#include <cstdio>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "arch/x86_64/vmm/probe/probe_format.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor::cli {

// `sigvisor help`'s line for `probe`, and what `sigvisor help probe` prints above
// the flags (ProbeFlags, options.cc).
constexpr CommandHelp kProbeHelp{
    "measure what this host's KVM does and what trapping costs",
    "Boots tiny calibration guests and reports whether guest CPL0 is emulated (PVM) or\n"
    "native, whether SYSCALL enters CPL0, whether INT n works from CPL3, and which trap\n"
    "mechanisms reach the VMM, with their round-trip cost (median over --repeats loops of\n"
    "--iterations operations, minus an empty loop).",
};

int ProbeCommand(const ProbeCommandOptions& flags) {
  if (!flags.args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor probe` takes no argument '%s'", flags.args[0]));
  }
  ProbeOptions options;
  const uint32_t iterations = flags.iterations;
  const uint32_t repeats = flags.repeats;
  if (iterations < 1 || iterations > 100000) {
    return ReportError("--iterations must be between 1 and 100000");
  }
  if (repeats < 1 || repeats > 100) return ReportError("--repeats must be between 1 and 100");
  options.iterations = static_cast<int>(iterations);
  options.repeats = static_cast<int>(repeats);

  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open(flags.kvm);
  if (!kvm.ok()) return ReportError(kvm.status());
  if (!flags.json) {
    std::fprintf(stderr, "probing KVM (%d loops of %d operations per mechanism)...\n",
                 options.repeats, options.iterations);
  }
  absl::StatusOr<ProbeReport> report = RunProbe(*kvm, options);
  if (!report.ok()) return ReportError(report.status());
  if (flags.json) {
    std::printf("%s\n", WithBuildInfo(ProbeReportToJson(*report)).dump(2).c_str());
  } else {
    std::printf("%s", FormatProbeTable(*report).c_str());
  }
  return 0;
}

}  // namespace sigvisor::cli
