// `sigvisor run`: boot one guest and report what it cost.
#include <cstdio>
#include <fstream>
#include <iterator>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/x86_machine.h"
#include "vmm/base/clock.h"
#include "vmm/cli/command.h"
#include "vmm/cli/flags.h"
#include "vmm/cli/image_arg.h"
#include "vmm/kvm/kvm.h"
#include "vmm/probe/probe.h"
#include "vmm/report/json_report.h"
#include "vmm/report/text_report.h"

namespace sigvisor::cli {
namespace {

// The guest command line from --workload, --ops and --cmdline.
absl::StatusOr<std::string> GuestCmdline() {
  std::vector<std::string> words;
  const std::string workload = absl::GetFlag(FLAGS_workload);
  if (!workload.empty()) {
    if (workload.find_first_of(" =") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--workload '%s': a workload name has no spaces or '='", workload));
    }
    words.push_back("workload=" + workload);
  }
  const std::string ops = absl::GetFlag(FLAGS_ops);
  if (!ops.empty()) {
    uint64_t count;
    if (!absl::SimpleAtoi(ops, &count)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--ops '%s' is not a count (a whole number >= 0)", ops));
    }
    words.push_back(absl::StrCat("ops=", count));
  }
  const std::string extra = absl::GetFlag(FLAGS_cmdline);
  if (!extra.empty()) words.push_back(extra);
  return absl::StrJoin(words, " ");
}

struct TrapChoice {
  x86::TrapMechanism mechanism = x86::TrapMechanism::kOff;
  std::string reason;
};

// --trap: which mechanism, and why. `auto` takes patch on every kind of host: `hlt`
// at CPL0 without an in-kernel irqchip reaches the VMM on PVM and on hardware KVM
// alike (the probe's hlt_cpl0 row), and it is the one mechanism that sees segment
// loads as well as debug-register accesses; hw-gd costs the same one exit per trap
// where it works at all, and on PVM it does not (the probe's vmm_dr7_gd row). So
// auto needs no probe run beyond DetectHost. An explicit hw-gd runs the probe (a few
// tens of milliseconds) and refuses when the host's DR7.GD does not exit.
absl::StatusOr<TrapChoice> ChooseTrap(const std::string& flag, const KvmSystem& kvm,
                                      const HostInfo& host) {
  if (flag == "auto") {
    return TrapChoice{x86::TrapMechanism::kPatch,
                      absl::StrFormat("--trap=auto on a %s host: hlt at CPL0 exits here and "
                                      "patching covers debug registers and segment loads",
                                      host.kind)};
  }
  std::optional<x86::TrapMechanism> mechanism = x86::ParseTrapMechanism(flag);
  if (!mechanism) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--trap '%s': give auto, hw-gd, patch, pv or off", flag));
  }
  if (*mechanism == x86::TrapMechanism::kPv) {
    return absl::UnimplementedError(
        "--trap=pv is not available yet: the guest kernel does not report its own traps "
        "through the hypercall port (use --trap=patch or --trap=auto)");
  }
  if (*mechanism != x86::TrapMechanism::kHwGd) return TrapChoice{*mechanism, ""};
  ProbeOptions quick;
  quick.iterations = 1;
  quick.repeats = 1;
  absl::StatusOr<ProbeReport> probe = RunProbe(kvm, quick);
  if (!probe.ok()) return probe.status();
  for (const MechanismResult& m : probe->mechanisms) {
    if (m.name != "vmm_dr7_gd") continue;
    if (m.works) return TrapChoice{*mechanism, "the probe's vmm_dr7_gd case works here"};
    return absl::FailedPreconditionError(absl::StrFormat(
        "--trap=hw-gd does not work on this %s host: the probe found %s (see `sigvisor "
        "probe`; use --trap=patch or --trap=auto)",
        probe->host_kind, m.note));
  }
  return absl::InternalError("the probe has no vmm_dr7_gd case");
}

}  // namespace

int RunCommand(std::span<char* const> args) {
  const uint64_t start_ns = MonotonicNs();
  if (!args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor run` takes no argument '%s' (see --help)",
                                       args[0]));
  }
  const bool json = absl::GetFlag(FLAGS_json);
  const absl::Duration timeout = absl::GetFlag(FLAGS_timeout);
  if (timeout <= absl::ZeroDuration()) return ReportError("--timeout must be positive");

  absl::StatusOr<std::string> cmdline = GuestCmdline();
  if (!cmdline.ok()) return ReportError(cmdline.status());
  absl::StatusOr<LoadedImage> image = LoadImage(absl::GetFlag(FLAGS_image), absl::GetFlag(FLAGS_variant));
  if (!image.ok()) return ReportError(image.status());
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open(absl::GetFlag(FLAGS_kvm));
  if (!kvm.ok()) return ReportError(kvm.status());
  absl::StatusOr<HostInfo> host = DetectHost(*kvm);
  if (!host.ok()) return ReportError(host.status());
  absl::StatusOr<TrapChoice> trap = ChooseTrap(absl::GetFlag(FLAGS_trap), *kvm, *host);
  if (!trap.ok()) return ReportError(trap.status());

  x86::MachineConfig config;
  config.memory_bytes = uint64_t{absl::GetFlag(FLAGS_memory)} << 20;
  config.cmdline = *cmdline;
  config.cpl0_emulated = host->cpl0_emulated;
  config.trap = trap->mechanism;
  config.session.timeout = timeout;
  // With --json, stdout carries only the JSON document: the console goes to stderr.
  FILE* console = json ? stderr : stdout;
  if (!absl::GetFlag(FLAGS_quiet)) {
    config.session.console_sink = [console](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), console);
      std::fflush(console);
    };
  }
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm, image->elf, config);
  if (!report.ok()) return ReportError(report.status());

  RunRecord record;
  record.image = image->label;
  record.variant = image->variant;
  record.variant_settings = image->variant_settings;
  record.cmdline = *cmdline;
  record.host = {host->kind, host->cpl0_emulated};
  record.trap = {std::string(x86::TrapMechanismName(trap->mechanism)), trap->reason,
                 report->trap_sites};
  record.result = std::move(report->result);
  record.vm_create_ns = report->vm_create_ns;
  record.setup_ns = report->setup_ns;
  record.wall_ns = MonotonicNs() - start_ns;

  if (json) {
    std::printf("%s\n", RunRecordToJson(record).dump(2).c_str());
  } else {
    std::printf("%s", FormatRunReport(record).c_str());
  }
  if (record.result.outcome != Outcome::kExited) {
    std::fprintf(stderr, "sigvisor: %s: %s\n", std::string(OutcomeName(record.result.outcome)).c_str(),
                 record.result.diagnosis.c_str());
  }
  return record.result.exit_code;
}

}  // namespace sigvisor::cli
