#include "vmm/app/cli/study_linux_column.h"

#include <cstdio>
#include <vector>

#include "absl/strings/str_format.h"
#include "vmm/app/cli/trace_session.h"
#include "vmm/trace/op_counts.h"

namespace sigvisor::cli {
namespace {

// What one Linux trace of the study takes from the study's own flags.
TraceOptions TraceFlagsFor(const std::string& kernel, const study::LinuxPhase& phase,
                           const StudyOptions& options) {
  TraceOptions flags;
  flags.image = kernel;
  flags.workload = std::string(phase.workload);
  flags.phase = std::string(phase.phase);
  flags.ops = "1";
  flags.timeout = options.runs.timeout;
  flags.no_sandbox = options.runs.no_sandbox;
  return flags;
}

// One op of each phase study `name` traces, in `loaded` (Linux when `variant` is empty,
// else that build of the bundled kernel), traced with nothing trapped and counted.
absl::StatusOr<study::TracedKernel> TraceKernel(std::string_view name, const std::string& image,
                                                const std::string& variant,
                                                const launch::LoadedImage& loaded,
                                                const StudyOptions& options, const KvmSystem& kvm,
                                                const HostInfo& host) {
  study::TracedKernel traced;
  for (const study::LinuxPhase& phase : study::LinuxPhasesFor(name)) {
    std::fprintf(stderr, "study %s: tracing one %s op in %s\n", std::string(name).c_str(),
                 std::string(phase.phase).c_str(),
                 variant.empty() ? image.c_str() : variant.c_str());
    TraceOptions flags = TraceFlagsFor(image, phase, options);
    if (!variant.empty()) flags.variant = variant;
    auto failed = [&](std::string why) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the trace of %s in %s %s", phase.phase, variant.empty() ? "Linux" : variant, why));
    };
    absl::StatusOr<TraceTarget> target = PrepareTraceTarget(flags, loaded);
    if (!target.ok())
      return failed(absl::StrFormat("could not start: %s", target.status().message()));
    absl::StatusOr<TracedPhase> t =
        TracePhase(flags, kvm, host, *target,
                   TrapChoice{TrapMechanism::kOff, "the Linux column traces with nothing trapped"},
                   /*echo_console=*/false);
    if (!t.ok()) return failed(absl::StrFormat("failed: %s", t.status().message()));
    if (!t->trace.complete)
      return failed(absl::StrFormat("is incomplete: %s", t->trace.stopped_why));
    std::optional<trace::OpCounts> counts = trace::CountOp(t->trace, t->analysis);
    if (!counts) return failed(absl::StrFormat("has no op to count: %s", t->analysis.ops_note));
    traced.ops.emplace_back(std::string(phase.phase), *std::move(counts));
  }
  return traced;
}

}  // namespace

absl::StatusOr<LinuxColumnTracer> LinuxColumnTracer::Load(const std::string& kernel,
                                                          const StudyOptions& options) {
  absl::StatusOr<launch::LoadedImage> image = launch::LoadImage(kernel, "baseline");
  if (!image.ok()) return image.status();
  if (image->linux_kernel() == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--linux takes a Linux kernel (a bzImage, or a vmlinux with its PVH entry note); '%s' "
        "is not one",
        kernel));
  }
  // Its symbols now (kallsyms), so that a kernel the trace cannot name is refused first.
  absl::StatusOr<TraceTarget> target =
      PrepareTraceTarget(TraceFlagsFor(kernel, {"divzero", "divzero"}, options), *image);
  if (!target.ok()) return target.status();
  return LinuxColumnTracer(kernel, options, *std::move(image), target->symbols);
}

study::LinuxColumn LinuxColumnTracer::Column(std::string_view name, const std::string& old_build,
                                             const std::string& new_build, const KvmSystem& kvm,
                                             const HostInfo& host) const {
  absl::StatusOr<study::TracedKernel> linux_kernel =
      TraceKernel(name, kernel_, "", image_, *options_, kvm, host);
  if (!linux_kernel.ok()) {
    return study::AbsentLinuxColumn(kernel_, std::string(linux_kernel.status().message()));
  }
  linux_kernel->symbols = symbols_.get();
  // The builds, counted alike; each image kept for its symbols.
  std::vector<launch::LoadedImage> builds;
  std::vector<study::TracedKernel> traced;
  std::string builds_why;
  for (const std::string& variant : {old_build, new_build}) {
    absl::StatusOr<launch::LoadedImage> loaded = launch::LoadImage(launch::kBundledKernel, variant);
    absl::StatusOr<study::TracedKernel> t =
        loaded.ok()
            ? TraceKernel(name, launch::kBundledKernel, variant, *loaded, *options_, kvm, host)
            : absl::StatusOr<study::TracedKernel>(loaded.status());
    if (!t.ok()) {
      builds_why = std::string(t.status().message());
      break;
    }
    builds.push_back(*std::move(loaded));
    traced.push_back(*std::move(t));
  }
  if (!builds_why.empty()) {
    return study::MakeLinuxColumn(name, kernel_, *linux_kernel, nullptr, nullptr, builds_why);
  }
  traced[0].symbols = &builds[0].elf.symbols();
  traced[1].symbols = &builds[1].elf.symbols();
  return study::MakeLinuxColumn(name, kernel_, *linux_kernel, &traced[0], &traced[1]);
}

}  // namespace sigvisor::cli
