#include "vmm/app/cli/run_setup.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/gdb/gdb_stub.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/exit_status.h"
#include "vmm/base/clock.h"
#include "vmm/report/json_report.h"
#include "vmm/report/text_report.h"

namespace sigvisor::cli {

// `auto` takes patch on every kind of host: `hlt` at CPL0 without an in-kernel
// irqchip reaches the VMM on PVM and on hardware KVM alike (the probe's hlt_cpl0 row),
// and it is the one mechanism that sees segment loads as well as debug-register
// accesses; hw-gd costs the same one exit per trap where it works at all, and on PVM
// it does not (the probe's vmm_dr7_gd row). So auto needs no probe run beyond
// DetectHost, nor the host at all to be resolved. An explicit hw-gd runs the probe (a
// few tens of milliseconds) and refuses when the host's DR7.GD does not exit.
TrapRequest AutoTrap() { return {.mechanism = TrapMechanism::kPatch, .automatic = true}; }

std::optional<TrapRequest> ParseTrapRequest(std::string_view text) {
  if (text == kAutoTrapName) return AutoTrap();
  std::optional<TrapMechanism> mechanism = ParseTrapMechanism(text);
  if (!mechanism) return std::nullopt;
  return TrapRequest{.mechanism = *mechanism};
}

absl::StatusOr<TrapRequest> ParseTrapFlag(const std::string& flag) {
  std::optional<TrapRequest> request = ParseTrapRequest(flag);
  if (!request) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--trap '%s': give auto, hw-gd, patch, pv or off", flag));
  }
  return *request;
}

absl::StatusOr<TrapChoice> ChooseTrap(const TrapRequest& request, const KvmSystem& kvm,
                                      const HostInfo& host) {
  const TrapMechanism mechanism = request.mechanism;
  if (request.automatic) {
    return TrapChoice{mechanism,
                      absl::StrFormat("--trap=auto on a %s host: hlt at CPL0 exits here and "
                                      "patching covers debug registers and segment loads",
                                      host.kind)};
  }
  if (mechanism == TrapMechanism::kPv) {
    return TrapChoice{mechanism, absl::StrFormat("--trap=pv covers %s",
                                                 x86::TrapCoverage(TrapMechanism::kPv))};
  }
  if (mechanism != TrapMechanism::kHwGd) return TrapChoice{mechanism, ""};
  ProbeOptions quick;
  quick.iterations = 1;
  quick.repeats = 1;
  absl::StatusOr<ProbeReport> probe = RunProbe(kvm, quick);
  if (!probe.ok()) return probe.status();
  for (const MechanismResult& m : probe->mechanisms) {
    if (m.name != "vmm_dr7_gd") continue;
    if (m.works) return TrapChoice{mechanism, "the probe's vmm_dr7_gd case works here"};
    return absl::FailedPreconditionError(absl::StrFormat(
        "--trap=hw-gd does not work on this %s host: the probe found %s (see `sigvisor "
        "probe`; use --trap=patch or --trap=auto)",
        probe->host_kind, m.note));
  }
  return absl::InternalError("the probe has no vmm_dr7_gd case");
}

absl::StatusOr<RunHost> OpenRunHost(const std::string& kvm_path, const std::string& trap_flag) {
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open(kvm_path);
  if (!kvm.ok()) return kvm.status();
  absl::StatusOr<HostInfo> info = DetectHost(*kvm);
  if (!info.ok()) return info.status();
  absl::StatusOr<TrapRequest> request = ParseTrapFlag(trap_flag);
  if (!request.ok()) return request.status();
  absl::StatusOr<TrapChoice> trap = ChooseTrap(*request, *kvm, *info);
  if (!trap.ok()) return trap.status();
  return RunHost{*std::move(kvm), *std::move(info), *std::move(trap)};
}

launch::RunSettings RunSettingsFor(const RunOptions& options, launch::ConsoleEcho& console) {
  launch::RunSettings settings = SettingsFrom(options, options.quiet ? nullptr : &console);
  settings.max_output_bytes = options.max_output;
  settings.gdb_sockets = !options.gdb.empty();
  return settings;
}

std::string VariantToBoot(const CommandLine& flags, const std::string& image,
                          const std::string& variant, int vcpus) {
  constexpr char kDefaultSmpVariant[] = "smp=on";
  if (vcpus > 1 && image == "kernel" && !flags.Given("variant")) return kDefaultSmpVariant;
  return variant;
}

absl::Status SetSmpMachine(int vcpus, const std::string& ipi, const std::string& lapic,
                           x86::MachineConfig& config) {
  config.vcpus = vcpus;
  if (!ipi.empty()) {
    absl::StatusOr<x86::IpiMethod> method = x86::ParseIpiMethod(ipi);
    if (!method.ok()) return method.status();
    config.ipi = *method;
  }
  if (!lapic.empty()) {
    absl::StatusOr<x86::Lapic> apics = x86::ParseLapic(lapic);
    if (!apics.ok()) return apics.status();
    config.lapic = *apics;
  }
  return absl::OkStatus();
}

launch::GuestRequest GuestRequestFor(const RunOptions& options) {
  return {.workload = options.workload,
          .ops = options.ops,
          .warmup = options.warmup,
          .extra = options.cmdline,
          .initrd = options.initrd,
          .vcpus = options.vcpus,
          .memory_mib = options.memory_mib,
          .memory_given = options.Given("memory"),
          .irqchip = options.irqchip,
          .modules = options.modules};
}

absl::Status AddGdbStub(x86::MachineConfig& config, const RunOptions& run,
                        const launch::LoadedImage& image, std::string* symbols_file) {
  symbols_file->clear();
  if (run.gdb.empty()) return absl::OkStatus();
  x86::GdbStubOptions options;
  options.listen = run.gdb;
  // A --timeout given covers the wait for gdb too (issue 30: it waited forever), and
  // Ctrl-C ends the wait (config.session.interrupt: `run`'s flag, set by now).
  if (run.Given("timeout")) options.wait_timeout = run.timeout;
  options.interrupt = config.session.interrupt;
  if (!image.variant.empty()) {  // embedded: give gdb a file to read the symbols from
    std::error_code error;
    const std::filesystem::path path =
        std::filesystem::temp_directory_path(error) /
        absl::StrFormat("sigvisor-%d-kernel-%s.elf", getpid(), image.variant);
    std::ofstream out(path, std::ios::binary);
    const auto bytes = image.elf.bytes();
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (out.good()) {
      options.symbols_path = path.string();
      *symbols_file = path.string();
    }
    // The bundled kernel's DWARF names its files relative to the source tree (its
    // compilation directory is /proc/self/cwd): gdb finds them through `directory`.
    const std::string& built_from = ThisBuild().source_dir;
    if (!built_from.empty() &&
        std::filesystem::exists(std::filesystem::path(built_from) / "guest-kit/kernel/signal.c",
                                error)) {
      options.source_dir = built_from;
    } else {
      options.no_source_dir_reason =
          built_from.empty() ? "not known (a build without its workspace status)"
                             : absl::StrFormat("not here (built from %s)", built_from);
    }
  } else {
    options.symbols_path = image.label;
  }
  absl::StatusOr<x86::InterceptorFactory> stub = x86::GdbStub::Factory(options);
  if (!stub.ok()) {
    if (!symbols_file->empty()) std::remove(symbols_file->c_str());
    return stub.status();
  }
  config.interceptors.push_back(*std::move(stub));
  if (!run.Given("timeout")) config.session.timeout = absl::InfiniteDuration();
  return absl::OkStatus();
}

int ReportRunEnd(const RunResult& result, bool bundled_kernel) {
  if (result.outcome != Outcome::kExited) {
    std::fprintf(stderr, "sigvisor: %s: %s\n", std::string(OutcomeName(result.outcome)).c_str(),
                 result.diagnosis.c_str());
  } else if (std::string note = GuestStatusNote(result, bundled_kernel); !note.empty()) {
    std::fprintf(stderr, "%s\n", note.c_str());
  }
  return RunExitStatus(result);
}

absl::StatusOr<std::vector<InjectionSpec>> ParseInjectionSpecs(
    const std::vector<std::string>& inject) {
  std::vector<InjectionSpec> specs;
  for (const std::string& text : inject) {
    absl::StatusOr<InjectionSpec> spec = ParseInjectionSpec(text);
    if (!spec.ok()) return spec.status();
    specs.push_back(*std::move(spec));
  }
  return specs;
}

RunRecord RecordOf(const launch::LoadedImage& image, const RunHost& host,
                   x86::MachineReport report, uint64_t start_ns) {
  RunRecord record;
  record.image = image.label;
  record.variant = image.variant;
  record.variant_settings = image.variant_settings;
  record.cmdline = report.kernel_cmdline;
  record.host = {host.info.kind, host.info.cpl0_emulated};
  record.guest_makes_hypercalls = report.protocol == x86::BootProtocol::kSigvisor;
  record.trap = {host.trap.mechanism, host.trap.reason, report.trap_sites};
  record.result = std::move(report.result);
  record.vm_create_ns = report.vm_create_ns;
  record.setup_ns = report.setup_ns;
  record.signal_frames = std::move(report.signal_frames);
  if (report.ipi) record.ipi = std::string(x86::IpiMethodName(*report.ipi));
  if (report.lapic) record.lapic = std::string(x86::LapicName(*report.lapic));
  record.ipis_delivered_by_vmm = report.ipis_delivered_by_vmm;
  record.guest_memory = report.guest_memory;
  record.wall_ns = MonotonicNs() - start_ns;
  return record;
}

int PrintRunRecord(const RunRecord& record, bool json) {
  if (json) {
    std::printf("%s\n", WithBuildInfo(RunRecordToJson(record)).dump(2).c_str());
  } else {
    std::printf("%s", FormatRunReport(record).c_str());
  }
  const int status = ReportRunEnd(record.result, !record.variant.empty());
  // --check-signal-frames: a frame that differs from the kernel's fails the check,
  // whatever the guest's own status (the report above names what differed).
  if (status == 0 && record.signal_frames && !record.signal_frames->mismatches.empty()) {
    std::fprintf(stderr,
                 "sigvisor: --check-signal-frames: the VMM's signal frames differ from "
                 "the kernel's (see the report)\n");
    return 1;
  }
  return status;
}

}  // namespace sigvisor::cli
