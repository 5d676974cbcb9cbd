// `sigvisor probe`: what this host's KVM does, and what each trap mechanism costs.
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "vmm/cli/build_info/build_info.h"
#include "vmm/cli/command.h"
#include "vmm/cli/flags.h"
#include "vmm/kvm/kvm.h"
#include "vmm/probe/probe.h"
#include "vmm/probe/probe_format.h"

namespace sigvisor::cli {

int ProbeCommand(std::span<char* const> args) {
  if (!args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor probe` takes no argument '%s'", args[0]));
  }
  ProbeOptions options;
  const uint32_t iterations = absl::GetFlag(FLAGS_iterations);
  const uint32_t repeats = absl::GetFlag(FLAGS_repeats);
  if (iterations < 1 || iterations > 100000) {
    return ReportError("--iterations must be between 1 and 100000");
  }
  if (repeats < 1 || repeats > 100) return ReportError("--repeats must be between 1 and 100");
  options.iterations = static_cast<int>(iterations);
  options.repeats = static_cast<int>(repeats);

  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open(absl::GetFlag(FLAGS_kvm));
  if (!kvm.ok()) return ReportError(kvm.status());
  if (!absl::GetFlag(FLAGS_json)) {
    std::fprintf(stderr, "probing KVM (%d loops of %d operations per mechanism)...\n",
                 options.repeats, options.iterations);
  }
  absl::StatusOr<ProbeReport> report = RunProbe(*kvm, options);
  if (!report.ok()) return ReportError(report.status());
  if (absl::GetFlag(FLAGS_json)) {
    std::printf("%s\n", WithBuildInfo(ProbeReportToJson(*report)).dump(2).c_str());
  } else {
    std::printf("%s", FormatProbeTable(*report).c_str());
  }
  return 0;
}

}  // namespace sigvisor::cli
