// `sigvisor probe`: what this host's KVM does, and what each trap mechanism costs.
#include <cstdio>

#include "absl/strings/str_format.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/kvm/kvm.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "arch/x86_64/vmm/probe/probe_format.h"

namespace sigvisor::cli {

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
