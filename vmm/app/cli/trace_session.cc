#include "vmm/app/cli/trace_session.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/trace/step_tracer.h"
#include "vmm/loader/linux/kallsyms.h"
#include "vmm/loader/system_map.h"

namespace sigvisor::cli {
namespace {

constexpr char kOpaqueOnPvm[] =
    "this host (PVM) does not single-step CPL3 code: KVM_GUESTDBG_SINGLESTEP stops at CPL0 "
    "only, so each stretch of user code is one opaque step from the kernel's iretq to the "
    "next kernel entry (docs/host-notes.md; `sigvisor probe`)";

// Kernel-mode addresses are the same in every run only without KASLR.
constexpr char kNoKaslr[] = "nokaslr";

}  // namespace

absl::StatusOr<TraceTarget> PrepareTraceTarget(const TraceOptions& flags, launch::LoadedImage image,
                                               std::optional<uint32_t> restored_memory_mib) {
  const bool linux_kernel = image.linux_kernel() != nullptr;
  launch::GuestRequest request = {
      .workload = flags.workload,
      .ops = flags.ops,
      .extra = flags.cmdline,
      .memory_mib = restored_memory_mib.value_or(flags.memory_mib),
      .memory_given = restored_memory_mib.has_value() || flags.Given("memory")};
  if (linux_kernel) {
    request.extra = flags.cmdline.empty() ? kNoKaslr : absl::StrCat(flags.cmdline, " ", kNoKaslr);
  }
  absl::StatusOr<launch::GuestSpec> guest = launch::PrepareGuest(image, request);
  if (!guest.ok()) return guest.status();
  std::shared_ptr<const SymbolTable> symbols;
  if (!flags.symbols.empty() && (!linux_kernel || !image.elf.symbols().empty())) {
    // The map would replace the image's own symbols (the bundled kernel's), naming its
    // code after another kernel's addresses: a profile silently wrong (issue 30).
    const size_t own = image.elf.symbols().size();
    const std::string names_itself =
        own == 0 ? "" : absl::StrFormat("names its code with its own %d symbols", own);
    return absl::InvalidArgumentError(absl::StrFormat(
        "--symbols is for a Linux kernel without symbols of its own (a bzImage, a stripped "
        "vmlinux); %s: leave --symbols out",
        linux_kernel ? absl::StrCat("'", image.label, "' ", names_itself)
                     : absl::StrCat(image.label, " is not a Linux kernel", own == 0 ? "" : " and ",
                                    names_itself)));
  }
  if (!flags.symbols.empty()) {
    absl::StatusOr<SymbolTable> map = ReadSystemMap(flags.symbols);
    if (!map.ok()) return map.status();
    symbols = std::make_shared<const SymbolTable>(*std::move(map));
  } else if (linux_kernel && image.elf.symbols().empty()) {
    // A stripped vmlinux (every distribution's bzImage) still carries kallsyms, the
    // table /proc/kallsyms prints: read from the vmlinux LoadImage already decompressed.
    absl::StatusOr<SymbolTable> kallsyms = linux_boot::ReadKallsyms(image.elf.bytes());
    if (!kallsyms.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("image '%s': %s: pass --symbols System.map to name its functions",
                          flags.image, kallsyms.status().message()));
    }
    symbols = std::make_shared<const SymbolTable>(*std::move(kallsyms));
  }
  return TraceTarget{std::move(image), *std::move(guest), std::move(symbols)};
}

absl::StatusOr<TracedPhase> TracePhase(const TraceOptions& flags, const KvmSystem& kvm,
                                       const HostInfo& host, const TraceTarget& target,
                                       const TrapChoice& trap, bool echo_console) {
  const launch::LoadedImage& image = target.image;
  const launch::GuestSpec& guest = target.guest;
  TracedPhase t;
  t.source = {image.label, image.variant, guest.cmdline};
  t.trace.variant = image.variant;
  t.trace.host_kind = host.kind;
  t.trace.trap = trap.mechanism;
  t.trace.kernel =
      image.linux_kernel() != nullptr ? trace::Kernel::kLinux : trace::Kernel::kBundled;
  // The console goes to stderr: stdout is the listing's (or the JSON document's).
  launch::ConsoleEcho console(stderr);
  launch::RunSettings settings = SettingsFrom(flags, echo_console ? &console : nullptr);
  settings.memory_mib = guest.memory_mib;
  // Single-stepped, the guest's clocks do not run at its TSC rate: no clock check.
  x86::MachineConfig config = launch::MachineConfigFor(
      settings,
      {.cmdline = guest.cmdline, .cpl0_emulated = host.cpl0_emulated, .trap = trap.mechanism});
  config.target = image.target;
  x86::StepTracerOptions options;
  options.phase = flags.phase;
  options.kernel_symbols = target.symbols;
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
    return absl::NotFoundError(
        absl::StrFormat("the guest measured no phase%s to trace (%s; the run's outcome: %s)",
                        options.phase.empty() ? "" : absl::StrCat(" called '", options.phase, "'"),
                        guest.cmdline, OutcomeName(t.result.outcome)));
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

}  // namespace sigvisor::cli
