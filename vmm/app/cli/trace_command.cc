// `sigvisor trace`: single-step one measured phase of the bundled kernel's workload, or
// of a Linux kernel's (--image bzImage, named by its own kallsyms, or by --symbols
// System.map), and show every instruction, the per-function profile and the stages of
// one op; with --diff, a second build's or a Linux kernel's beside it, stage by stage.
#include <cstdio>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "vmm/app/bench/matrix.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/exit_status.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/cli/trace_session.h"
#include "vmm/app/launch/image.h"
#include "vmm/kvm/kvm.h"
#include "vmm/trace/format.h"

namespace sigvisor::cli {

// `sigvisor help`'s line for `trace`, and what `sigvisor help trace` prints above
// the flags (TraceFlags, options.cc).
constexpr CommandHelp kTraceHelp{
    "single-step a measured phase: every instruction, per-function profile",
    "Boots the bundled kernel with --workload and --ops K and single-steps the guest\n"
    "(KVM_GUESTDBG_SINGLESTEP) from the measured phase's BEGIN marker to its END:\n"
    "every instruction with address, symbol+offset, bytes and Capstone's disassembly,\n"
    "exits, traps, exceptions and privilege changes marked where they happen. Code the\n"
    "host does not step (CPL3 on PVM hosts) is one opaque step with its entry and exit.\n"
    "Then a summary per op: kernel instructions per function and per stage of signal\n"
    "delivery, checked against the kernel instruction count the ledger reports.\n"
    "With --restore DIR, the VM `sigvisor snapshot --out DIR` saved is restored instead of\n"
    "booted: the same trace of the same build, without its boot.\n"
    "--image vmlinuz traces a stock Linux kernel (named by its own kallsyms), its stages\n"
    "by Linux's stage table; --diff linux=vmlinuz sets Linux's op beside the bundled\n"
    "kernel's, stage by stage (docs/trace.md).\n"
    "\nExamples:\n"
    "  sigvisor trace --workload divzero --ops 1\n"
    "  sigvisor trace --workload divzero --ops 1 --stages\n"
    "  sigvisor trace --workload divzero --ops 1 --variant dr7=always --diff dr7=lazy\n"
    "  sigvisor trace --workload lat_sig --phase sig_hndl --ops 1 --json\n"
    "  sigvisor trace --workload divzero --ops 1 --diff linux=/boot/vmlinuz-6.1.0-57-amd64\n"
    "  sigvisor trace --restore /tmp/baseline.snap --workload divzero --ops 1 --stages",
};

int TraceCommand(const TraceOptions& options) {
  if (!options.args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor trace` takes no argument '%s' (see --help)",
                                       options.args[0]));
  }
  if (options.timeout <= absl::ZeroDuration()) return ReportError("--timeout must be positive");
  // --restore DIR: the snapshot's image, its VM restored instead of booted (run_restore.cc).
  std::optional<SnapshotToRestore> restore;
  if (!options.restore.empty()) {
    if (!options.diff.empty()) {
      return ReportError(
          "--diff with --restore: a snapshot holds one build, and --diff traces a second; "
          "trace each build's snapshot on its own, or drop --restore");
    }
    absl::StatusOr<SnapshotToRestore> read =
        ReadSnapshotToRestore(options.restore, options, options.trap, /*reads_kernel_code=*/true);
    if (!read.ok()) return ReportError(read.status());
    if (read->header.vcpus > 1) {
      return ReportError(absl::StrFormat(
          "snapshot %s holds a VM of %d vCPUs, and the step tracer follows vCPU 0 only: trace "
          "a snapshot of one vCPU",
          options.restore, read->header.vcpus));
    }
    restore = *std::move(read);
  }
  absl::StatusOr<launch::LoadedImage> image =
      restore ? absl::StatusOr<launch::LoadedImage>(std::move(restore->image))
              : launch::LoadImage(options.image, options.variant);
  if (!image.ok()) return ReportError(image.status());
  if (image->linux_kernel() != nullptr && !options.diff.empty()) {
    return ReportError(
        absl::StrFormat("--diff on a Linux kernel: put the bundled kernel first and Linux second "
                        "(`sigvisor trace --variant baseline --diff linux=%s`)",
                        options.image));
  }
  absl::StatusOr<TraceTarget> target =
      PrepareTraceTarget(options, *std::move(image),
                         restore ? std::optional<uint32_t>(restore->memory_mib) : std::nullopt);
  if (!target.ok()) return ReportError(target.status());
  // --diff: a second build of the bundled kernel, or (linux=PATH) a Linux kernel traced
  // through the same workload, with its own memory default and kallsyms.
  std::optional<TraceTarget> other;
  if (!options.diff.empty()) {
    TraceOptions other_flags = options;
    absl::StatusOr<launch::LoadedImage> loaded;
    if (options.diff.starts_with(bench::kLinuxBuildSpec)) {
      // (--symbols was refused above: the bundled kernel names its own code.)
      other_flags.image = options.diff.substr(bench::kLinuxBuildSpec.size());
      other_flags.cmdline.clear();        // the bundled kernel's words, not Linux's
      other_flags.given.erase("memory");  // Linux's own default, not the bundled kernel's
      // An image file takes no build of the bundled kernel: LoadImage's "baseline".
      loaded = launch::LoadImage(other_flags.image, "baseline");
    } else {
      loaded = launch::LoadImage(options.image, options.diff);
    }
    if (!loaded.ok()) return ReportError(loaded.status());
    absl::StatusOr<TraceTarget> prepared = PrepareTraceTarget(other_flags, *std::move(loaded));
    if (!prepared.ok()) return ReportError(prepared.status());
    other = *std::move(prepared);
  }
  absl::StatusOr<RunHost> run_host =
      OpenRunHost(options.kvm, restore ? restore->trap : options.trap);
  if (!run_host.ok()) return ReportError(run_host.status());
  if (restore) {
    if (absl::Status s = CheckRestoreHere(*restore, *run_host); !s.ok()) return ReportError(s);
  }
  const KvmSystem* kvm = &run_host->kvm;
  const HostInfo* host = &run_host->info;
  const TrapChoice* trap = &run_host->trap;

  absl::StatusOr<TracedPhase> left = TracePhase(options, *kvm, *host, *target, *trap);
  if (!left.ok()) return ReportError(left.status());
  std::optional<TracedPhase> right;
  if (other) {
    absl::StatusOr<TracedPhase> traced = TracePhase(options, *kvm, *host, *other, *trap);
    if (!traced.ok()) return ReportError(traced.status());
    right = *std::move(traced);
  }

  if (options.json) {
    nlohmann::ordered_json doc =
        trace::TraceToJson(left->source, left->trace, left->analysis);
    if (restore) doc["restored_from"] = restore->dir;
    if (right) {
      trace::TraceDiff d = trace::DiffTraces(left->source, left->trace, left->analysis,
                                             right->source, right->trace, right->analysis);
      nlohmann::ordered_json both;
      both["schema"] = "sigvisor.trace-diff/1";
      both["left"] = std::move(doc);
      both["right"] = trace::TraceToJson(right->source, right->trace, right->analysis);
      both["diff"] = std::move(d.json);
      doc = std::move(both);
    }
    std::printf("%s\n", WithBuildInfo(std::move(doc)).dump(2).c_str());
  } else if (right) {
    std::printf("%s\n", trace::FormatSummary(left->source, left->trace, left->analysis).c_str());
    std::printf("%s\n",
                trace::FormatSummary(right->source, right->trace, right->analysis).c_str());
    std::printf("%s", trace::DiffTraces(left->source, left->trace, left->analysis, right->source,
                                        right->trace, right->analysis)
                          .text.c_str());
  } else {
    if (!options.stages) {
      std::printf("%s\n", trace::FormatListing(left->trace, left->analysis).c_str());
    }
    std::printf("%s", trace::FormatSummary(left->source, left->trace, left->analysis).c_str());
  }

  // The exit status as for `run` (exit_status.h): a guest that failed first, then a
  // trace the tracer could not finish (sigvisor's failure), then the guest's status.
  for (const TracedPhase* t : {&*left, right ? &*right : nullptr}) {
    if (t == nullptr) continue;
    if (t->result.outcome != Outcome::kExited) {
      return ReportRunEnd(t->result, !t->source.variant.empty());
    }
    if (!t->trace.complete) {
      std::fprintf(stderr, "sigvisor: the trace of %s is incomplete: %s\n", t->source.image.c_str(),
                   t->trace.stopped_why.c_str());
      return kExitSigvisorFailed;
    }
  }
  for (const TracedPhase* t : {&*left, right ? &*right : nullptr}) {
    if (t != nullptr && t->result.exit_code != 0) {
      return ReportRunEnd(t->result, !t->source.variant.empty());
    }
  }
  return 0;
}

}  // namespace sigvisor::cli
