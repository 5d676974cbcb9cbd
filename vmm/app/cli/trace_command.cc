// `sigvisor trace`: single-step one measured phase of the bundled kernel's workload, or
// of a Linux kernel's (--image bzImage, named by its own kallsyms, or by --symbols
// System.map), and show every instruction, the per-function profile and the stages of
// one op.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "arch/x86_64/vmm/trace/step_tracer.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/exit_status.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/image.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/linux/kallsyms.h"
#include "vmm/loader/system_map.h"
#include "vmm/trace/analysis.h"
#include "vmm/trace/format.h"

namespace sigvisor::cli {
namespace {

constexpr char kOpaqueOnPvm[] =
    "this host (PVM) does not single-step CPL3 code: KVM_GUESTDBG_SINGLESTEP stops at CPL0 "
    "only, so each stretch of user code is one opaque step from the kernel's iretq to the "
    "next kernel entry (docs/host-notes.md; `sigvisor probe`)";

struct Traced {
  trace::TraceSource source;
  trace::Trace trace;
  trace::Analysis analysis;
  RunResult result;
};

// Kernel-mode addresses are the same in every run only without KASLR.
constexpr char kNoKaslr[] = "nokaslr";

absl::StatusOr<Traced> TraceOnce(const TraceOptions& flags, const KvmSystem& kvm,
                                 const HostInfo& host, const launch::LoadedImage& image,
                                 const launch::GuestSpec& guest, const TrapChoice& trap,
                                 std::shared_ptr<const SymbolTable> symbols) {
  Traced t;
  t.source = {image.label, image.variant, guest.cmdline};
  t.trace.variant = image.variant;
  t.trace.host_kind = host.kind;
  t.trace.trap = trap.mechanism;
  // The console goes to stderr: stdout is the listing's (or the JSON document's).
  launch::ConsoleEcho console(stderr);
  launch::RunSettings settings = SettingsFrom(flags, &console);
  settings.memory_mib = guest.memory_mib;
  // Single-stepped, the guest's clocks do not run at its TSC rate: no clock check.
  x86::MachineConfig config = launch::MachineConfigFor(
      settings,
      {.cmdline = guest.cmdline, .cpl0_emulated = host.cpl0_emulated, .trap = trap.mechanism});
  config.target = image.target;
  x86::StepTracerOptions options;
  options.phase = flags.phase;
  options.kernel_symbols = std::move(symbols);
  options.opaque_reason = host.cpl0_emulated
                              ? kOpaqueOnPvm
                              : "the tracer steps only the kernel: on this host (CPL0 runs "
                                "directly) it lets user code run and stops again at the next "
                                "kernel entry, through the guest's IDT and SYSCALL entry "
                                "redirected while it traces";
  config.interceptors.push_back(x86::StepTracer::Factory(options, &t.trace));
  config.interceptors_trace_only = true;
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, image.elf, config);
  console.EndLine();
  if (!report.ok()) return report.status();
  t.result = std::move(report->result);
  t.trace.run_outcome = std::string(OutcomeName(t.result.outcome));
  t.trace.run_timeout = absl::FormatDuration(flags.timeout);
  if (t.trace.phase.empty()) {
    return absl::NotFoundError(absl::StrFormat(
        "the guest measured no phase%s to trace (%s; the run's outcome: %s)",
        options.phase.empty() ? "" : absl::StrCat(" called '", options.phase, "'"), guest.cmdline,
        OutcomeName(t.result.outcome)));
  }
  // The ledger's count for the same phase, where the host counts kernel instructions.
  if (host.cpl0_emulated) {
    for (const PhaseResult& phase : t.result.phases) {
      if (phase.name != t.trace.phase) continue;
      if (auto it = phase.kvm_stats.find("insn_emulation"); it != phase.kvm_stats.end()) {
        t.trace.ledger_kernel_insns = it->second;
      }
      if (phase.marker_overhead) {
        auto it = phase.marker_overhead->kvm_stats.find("insn_emulation");
        if (it != phase.marker_overhead->kvm_stats.end()) {
          t.trace.ledger_marker_kernel_insns = it->second;
        }
      }
      break;
    }
  }
  t.analysis = trace::Analyze(t.trace);
  return t;
}

}  // namespace

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
    "\nExamples:\n"
    "  sigvisor trace --workload divzero --ops 1\n"
    "  sigvisor trace --workload divzero --ops 1 --stages\n"
    "  sigvisor trace --workload divzero --ops 1 --variant dr7=always --diff dr7=lazy\n"
    "  sigvisor trace --workload lat_sig --phase sig_hndl --ops 1 --json",
};

int TraceCommand(const TraceOptions& options) {
  if (!options.args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor trace` takes no argument '%s' (see --help)",
                                       options.args[0]));
  }
  if (options.timeout <= absl::ZeroDuration()) return ReportError("--timeout must be positive");
  absl::StatusOr<launch::LoadedImage> image = launch::LoadImage(options.image, options.variant);
  if (!image.ok()) return ReportError(image.status());
  const bool linux_kernel = image->linux_kernel() != nullptr;
  launch::GuestRequest request = {.workload = options.workload,
                                  .ops = options.ops,
                                  .extra = options.cmdline,
                                  .memory_mib = options.memory_mib,
                                  .memory_given = options.Given("memory")};
  if (linux_kernel) {
    request.extra = options.cmdline.empty() ? kNoKaslr : absl::StrCat(options.cmdline, " ", kNoKaslr);
  }
  absl::StatusOr<launch::GuestSpec> guest = launch::PrepareGuest(*image, request);
  if (!guest.ok()) return ReportError(guest.status());
  if (linux_kernel && !options.diff.empty()) {
    return ReportError("--diff compares two builds of the bundled kernel; not a Linux kernel");
  }
  std::shared_ptr<const SymbolTable> symbols;
  if (!options.symbols.empty() && (!linux_kernel || !image->elf.symbols().empty())) {
    // The map would replace the image's own symbols (the bundled kernel's), naming its
    // code after another kernel's addresses: a profile silently wrong (issue 30).
    const size_t own = image->elf.symbols().size();
    const std::string names_itself =
        own == 0 ? "" : absl::StrFormat("names its code with its own %d symbols", own);
    return ReportError(absl::StrFormat(
        "--symbols is for a Linux kernel without symbols of its own (a bzImage, a stripped "
        "vmlinux); %s: leave --symbols out",
        linux_kernel ? absl::StrCat("'", image->label, "' ", names_itself)
                     : absl::StrCat(image->label, " is not a Linux kernel", own == 0 ? "" : " and ",
                                    names_itself)));
  }
  if (!options.symbols.empty()) {
    absl::StatusOr<SymbolTable> map = ReadSystemMap(options.symbols);
    if (!map.ok()) return ReportError(map.status());
    symbols = std::make_shared<const SymbolTable>(*std::move(map));
  } else if (linux_kernel && image->elf.symbols().empty()) {
    // A stripped vmlinux (every distribution's bzImage) still carries kallsyms, the
    // table /proc/kallsyms prints: read from the vmlinux LoadImage already decompressed.
    absl::StatusOr<SymbolTable> kallsyms = linux_boot::ReadKallsyms(image->elf.bytes());
    if (!kallsyms.ok()) {
      return ReportError(
          absl::StrFormat("image '%s': %s: pass --symbols System.map to name its functions",
                          options.image, kallsyms.status().message()));
    }
    symbols = std::make_shared<const SymbolTable>(*std::move(kallsyms));
  }
  std::optional<launch::LoadedImage> other;
  if (!options.diff.empty()) {
    absl::StatusOr<launch::LoadedImage> loaded = launch::LoadImage(options.image, options.diff);
    if (!loaded.ok()) return ReportError(loaded.status());
    other = *std::move(loaded);
  }
  absl::StatusOr<RunHost> run_host = OpenRunHost(options.kvm, options.trap);
  if (!run_host.ok()) return ReportError(run_host.status());
  const KvmSystem* kvm = &run_host->kvm;
  const HostInfo* host = &run_host->info;
  const TrapChoice* trap = &run_host->trap;

  absl::StatusOr<Traced> left =
      TraceOnce(options, *kvm, *host, *image, *guest, *trap, symbols);
  if (!left.ok()) return ReportError(left.status());
  std::optional<Traced> right;
  if (other) {
    absl::StatusOr<Traced> traced =
        TraceOnce(options, *kvm, *host, *other, *guest, *trap, symbols);
    if (!traced.ok()) return ReportError(traced.status());
    right = *std::move(traced);
  }

  if (options.json) {
    nlohmann::ordered_json doc =
        trace::TraceToJson(left->source, left->trace, left->analysis);
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
  for (const Traced* t : {&*left, right ? &*right : nullptr}) {
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
  for (const Traced* t : {&*left, right ? &*right : nullptr}) {
    if (t != nullptr && t->result.exit_code != 0) {
      return ReportRunEnd(t->result, !t->source.variant.empty());
    }
  }
  return 0;
}

}  // namespace sigvisor::cli
