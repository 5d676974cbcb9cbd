// `sigvisor snapshot`: boot a guest to its quiescent point and save the VM there, so
// that `run --restore` starts from it instead of booting (docs/snapshots.md).
#include <cstdio>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/machine/saved_vm.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/image.h"

namespace sigvisor::cli {

constexpr CommandHelp kSnapshotHelp{
    "boot a guest to its quiescent point and save the VM there (run --restore starts from it)",
    "Boots the image (by default the bundled kernel) and stops it where the guest says it\n"
    "is booted and waiting for orders, before its first user program: the bundled kernel's\n"
    "SIGVISOR_HC_ORDERS call, or a Linux kernel's embedded init asking for its orders\n"
    "(init holds its own FPU state there, so no host needs to give it).\n"
    "The VM is saved in --out DIR: DIR/state (every vCPU, the CPUID, the devices, the\n"
    "in-kernel irqchip, PIT and KVM clock where the VM has them, a header naming the\n"
    "image, host kind and guest ABI, each part checksummed) and DIR/memory (guest memory,\n"
    "sparse: pages never written take no disk). A Linux boot's --timeout is 20 minutes\n"
    "unless given. With --vcpus N the bundled kernel's SMP build is saved before it\n"
    "starts its APs (a restore runs N vCPUs with the snapshot's --ipi and --lapic), and\n"
    "Linux with its APs stopped once init has asked for its orders.\n"
    "`sigvisor run --restore DIR --workload W --ops N` then maps the memory\n"
    "copy-on-write, puts the vCPU and devices back and gives the guest its orders: per-op\n"
    "counts are those of a booted run. A snapshot is restored only on a host of its kind\n"
    "and CPU, by a sigvisor of its guest ABI and snapshot format, with the same image.\n"
    "\nExamples:\n"
    "  sigvisor snapshot --out /tmp/baseline.snap\n"
    "  sigvisor run --restore /tmp/baseline.snap --workload divzero --ops 16\n"
    "  sigvisor snapshot --variant debugreg=pv --trap=pv --out /tmp/pv.snap\n"
    "  sigvisor snapshot --vcpus 2 --ipi pv --out /tmp/smp.snap\n"
    "  sigvisor snapshot --image vmlinuz --out /tmp/linux.snap",
};

namespace {

nlohmann::ordered_json SnapshotJson(const std::string& dir, const launch::LoadedImage& image,
                                    int vcpus, const HostInfo& host,
                                    const x86::MachineReport& report) {
  const x86::MachineReport::Saved& saved = *report.saved;
  nlohmann::ordered_json json;
  json["schema"] = "sigvisor.snapshot/1";
  json["dir"] = dir;
  json["image"] = image.label;
  json["variant"] = image.variant;
  json["vcpus"] = vcpus;
  if (report.ipi) json["ipi"] = x86::IpiMethodName(*report.ipi);
  if (report.lapic) json["lapic"] = x86::LapicName(*report.lapic);
  json["host"] = {{"kind", host.kind}, {"cpl0_emulated", host.cpl0_emulated}};
  json["kernel_cmdline"] = report.kernel_cmdline;
  json["vm_create_ns"] = report.vm_create_ns;
  json["boot_ns"] = report.result.run_ns;
  json["state_bytes"] = saved.state_bytes;
  json["memory_pages_written"] = saved.memory_pages;
  json["memory_disk_bytes"] = saved.memory_disk_bytes;
  json["fpu"] = saved.fpu;
  json["msrs_not_saved"] = saved.msrs_refused;
  return json;
}

std::string SnapshotText(const std::string& dir, const launch::LoadedImage& image, int vcpus,
                         const HostInfo& host, const x86::MachineReport& report,
                         uint64_t memory_bytes) {
  const x86::MachineReport::Saved& saved = *report.saved;
  std::vector<std::string> msrs;
  for (uint32_t index : saved.msrs_refused) msrs.push_back(absl::StrFormat("%#x", index));
  std::string machine;  // several vCPUs: what a restore keeps of them
  if (report.ipi && report.lapic) {
    machine = absl::StrFormat(", %d vCPUs (--ipi %s --lapic %s; the APs not started yet)", vcpus,
                              x86::IpiMethodName(*report.ipi), x86::LapicName(*report.lapic));
  } else if (vcpus > 1) {
    machine = absl::StrFormat(", %d vCPUs (the APs stopped after the quiescent point)", vcpus);
  }
  std::string out = absl::StrFormat(
      "sigvisor: saved %s%s at its quiescent point in %s (host %s)\n"
      "  VM create %.2f ms, boot %.2f ms to the quiescent point\n"
      "  state %d bytes; memory %d MiB, %d pages written (%d KiB on disk)\n"
      "  FPU: %s\n",
      image.label, machine, dir, host.kind, report.vm_create_ns / 1e6, report.result.run_ns / 1e6,
      saved.state_bytes, memory_bytes >> 20, saved.memory_pages, saved.memory_disk_bytes >> 10,
      saved.fpu);
  if (!msrs.empty()) {
    absl::StrAppendFormat(&out, "  MSRs the host would not read (not saved): %s\n",
                          absl::StrJoin(msrs, " "));
  }
  absl::StrAppendFormat(&out, "restore it with: sigvisor run --restore %s --workload divzero\n",
                        dir);
  return out;
}

}  // namespace

int SnapshotCommand(const SnapshotOptions& options) {
  if (!options.args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor snapshot` takes no argument '%s' (see --help)",
                                       options.args[0]));
  }
  if (options.out.empty()) {
    return ReportError("give --out DIR: the directory to save the VM in");
  }
  if (options.timeout <= absl::ZeroDuration()) return ReportError("--timeout must be positive");
  absl::StatusOr<launch::LoadedImage> image = launch::LoadImage(
      options.image, VariantToBoot(options, options.image, options.variant, options.vcpus));
  if (!image.ok()) return ReportError(image.status());
  // The bundled kernel names its quiescent point (SIGVISOR_HC_ORDERS), and so does a
  // stock Linux kernel's embedded init (its ORDERS marker); a Multiboot kernel names none.
  const bool linux_kernel = std::holds_alternative<x86::LinuxKernel>(image->target);
  if (!linux_kernel && !std::holds_alternative<x86::SigvisorKernel>(image->target)) {
    return ReportError(absl::StrFormat(
        "%s is a Multiboot kernel: only the bundled kernel (and images of sigvisor's ABI) and "
        "a Linux kernel with the embedded init name a quiescent point to save at",
        image->label));
  }
  // A Linux kernel's initramfs (the embedded init) and RAM (its default, unless --memory).
  uint64_t memory_mib = options.memory_mib;
  if (linux_kernel) {
    absl::StatusOr<launch::GuestSpec> guest = launch::PrepareGuest(
        *image, {.memory_mib = options.memory_mib, .memory_given = options.Given("memory")});
    if (!guest.ok()) return ReportError(guest.status());
    memory_mib = guest->memory_mib;
  }
  absl::StatusOr<TrapRequest> trap = ParseTrapFlag(options.trap);
  if (!trap.ok()) return ReportError(trap.status());
  if (trap->mechanism != TrapMechanism::kOff && trap->mechanism != TrapMechanism::kPv) {
    return ReportError(absl::StrFormat(
        "--trap=%s: a snapshot boots with off or pv; patch and hw-gd are installed when it is "
        "restored (run --restore DIR --trap=%s)",
        options.trap, options.trap));
  }

  launch::ConsoleEcho console(stderr);
  launch::RunSettings settings = SettingsFrom(options, &console);
  settings.memory_mib = memory_mib;
  // A Linux boot takes minutes where it is slow (a nested host); 60 s is the bundled
  // kernel's default.
  if (linux_kernel && !options.Given("timeout")) settings.timeout = absl::Minutes(20);
  x86::MachineConfig config =
      launch::MachineConfigFor(settings, {.cmdline = "", .trap = trap->mechanism});
  config.target = image->target;
  if (absl::Status s = SetSmpMachine(options.vcpus, options.ipi, options.lapic, config); !s.ok()) {
    return ReportError(s);
  }
  config.save_to = options.out;
  if (absl::Status s = x86::CheckMachineConfig(image->elf, config); !s.ok()) {
    return ReportError(s);
  }
  absl::StatusOr<RunHost> host = OpenRunHost(options.kvm, "off");
  if (!host.ok()) return ReportError(host.status());
  config.cpl0_emulated = host->info.cpl0_emulated;
  config.save_header = x86::NewSnapshotHeader(image->source_fnv1a64, options.image, image->variant,
                                              VersionLine(), host->info.kind);
  if (linux_kernel) config.save_header.guest_kind = "linux";
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(host->kvm, image->elf, config);
  console.EndLine();
  if (!report.ok()) return ReportError(report.status());
  if (report->result.outcome != Outcome::kSaved || !report->saved) {
    return ReportError(
        absl::StrFormat("the guest did not reach its quiescent point (%s%s%s): nothing was saved",
                        OutcomeName(report->result.outcome),
                        report->result.diagnosis.empty() ? "" : ": ", report->result.diagnosis));
  }
  if (options.json) {
    std::printf("%s\n",
                WithBuildInfo(SnapshotJson(options.out, *image, config.vcpus, host->info, *report))
                    .dump(2)
                    .c_str());
  } else {
    std::printf("%s", SnapshotText(options.out, *image, config.vcpus, host->info, *report,
                                   config.memory_bytes)
                          .c_str());
  }
  return 0;
}

}  // namespace sigvisor::cli
