// `sigvisor run --restore DIR`: the VM `sigvisor snapshot` saved, restored instead of
// booted, its guest given this run's orders (docs/snapshots.md); and the reading of a
// snapshot to restore that `trace --restore` shares.
#include <memory>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/machine/saved_vm.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/run_interrupt.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/image.h"
#include "vmm/base/clock.h"
#include "vmm/snapshot/snapshot_header.h"

namespace sigvisor::cli {
namespace {

// What the restored guest keeps from its boot, so a run cannot change it: refused by
// name rather than silently ignored (each command has those of its flags that are here).
constexpr std::string_view kFixedBySnapshot[] = {"image",  "variant", "cmdline", "memory", "vcpus",
                                                 "ipi",    "lapic",   "irqchip", "module", "initrd",
                                                 "inject", "seed",    "gdb",     "arch",   "cores"};

}  // namespace

absl::StatusOr<SnapshotToRestore> ReadSnapshotToRestore(const std::string& dir,
                                                        const CommandLine& flags,
                                                        const std::string& trap_flag,
                                                        bool reads_kernel_code) {
  if (std::string flag = FirstGiven(flags, kFixedBySnapshot); !flag.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s with --restore: a restored guest keeps what it was booted with (see `sigvisor "
        "help snapshot`); take a snapshot with it instead",
        flag));
  }
  absl::StatusOr<x86::SavedVm> saved = x86::ReadSavedVm(dir);
  if (!saved.ok()) return saved.status();
  const SnapshotHeader header = saved->header;  // a copy: `saved` moves into the target
  // An image given by its path has no variant (a build of the bundled kernel has one):
  // loaded as `--image PATH` loads it, with --variant's default.
  const bool linux_kernel = header.guest_kind == "linux";
  absl::StatusOr<launch::LoadedImage> image =
      linux_kernel && !reads_kernel_code
          ? launch::LoadLinuxFileToRestore(header.image)
          : launch::LoadImage(header.image,
                              header.variant.empty() ? std::string("baseline") : header.variant);
  if (!image.ok()) {
    return absl::Status(image.status().code(),
                        absl::StrFormat("snapshot %s names image '%s': %s", dir, header.image,
                                        image.status().message()));
  }
  image->target =
      x86::RestoredVm{std::make_shared<const x86::SavedVm>(*std::move(saved)),
                      linux_kernel ? x86::BootProtocol::kLinux : x86::BootProtocol::kSigvisor,
                      image->source_fnv1a64};
  return SnapshotToRestore{
      .dir = dir,
      .header = header,
      .image = *std::move(image),
      .memory_mib = static_cast<uint32_t>(header.memory_bytes >> 20),
      // Without --trap, the mechanism the snapshot was booted with (a pv kernel's is pv).
      .trap = flags.Given("trap") ? trap_flag : header.trap};
}

absl::Status CheckRestoreHere(const SnapshotToRestore& snapshot, const RunHost& host) {
  return CheckRestoreHost(
      snapshot.header,
      {.abi_version = SIGVISOR_ABI_VERSION, .arch = "x86_64", .host_kind = host.info.kind},
      snapshot.dir);
}

int RunRestored(const RunOptions& options, uint64_t start_ns) {
  absl::StatusOr<SnapshotToRestore> snapshot =
      ReadSnapshotToRestore(options.restore, options, options.trap, /*reads_kernel_code=*/false);
  if (!snapshot.ok()) return ReportError(snapshot.status());
  launch::LoadedImage& image = snapshot->image;
  // The orders, in the words of the kernel that was saved (the bundled kernel's, or
  // the Linux init's).
  launch::GuestRequest request = GuestRequestFor(options);
  request.memory_mib = snapshot->memory_mib;
  request.memory_given = true;
  request.vcpus = static_cast<int>(snapshot->header.vcpus);  // an xcpu_ workload needs 2
  absl::StatusOr<launch::GuestSpec> guest = launch::PrepareGuest(image, request);
  if (!guest.ok()) return ReportError(guest.status());
  absl::StatusOr<TrapRequest> trap_request = ParseTrapFlag(snapshot->trap);
  if (!trap_request.ok()) return ReportError(trap_request.status());

  launch::ConsoleEcho console(RunConsoleStream(options));
  launch::RunSettings settings = RunSettingsFor(options, console);
  settings.memory_mib = snapshot->memory_mib;
  x86::MachineConfig config = launch::MachineConfigFor(
      settings, {.cmdline = guest->cmdline, .trap = trap_request->mechanism, .check_clocks = true});
  config.target = image.target;
  // Its vCPUs, IPI way and local APICs, as it was saved.
  if (absl::Status s = x86::TakeSavedMachine(snapshot->header, config); !s.ok()) {
    return ReportError(s);
  }
  config.check_signal_frames = options.check_signal_frames;
  config.block_phase_interrupts = options.block_phase_interrupts;
  config.report_guest_memory = true;  // the run's report has guest_memory
  InstallRunInterruptHandler();
  config.session.interrupt = RunInterruptFlag();
  if (absl::Status s = x86::CheckMachineConfig(image.elf, config); !s.ok()) {
    return ReportError(s);
  }

  absl::StatusOr<RunHost> run_host = OpenRunHost(options.kvm, snapshot->trap);
  if (!run_host.ok()) return ReportError(run_host.status());
  if (absl::Status s = CheckRestoreHere(*snapshot, *run_host); !s.ok()) return ReportError(s);
  config.cpl0_emulated = run_host->info.cpl0_emulated;
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(run_host->kvm, image.elf, config);
  console.EndLine();
  if (!report.ok()) return ReportError(report.status());

  RunRecord record = RecordOf(image, *run_host, *std::move(report), start_ns);
  record.restored_from = options.restore;
  record.phase_interrupts_blocked = options.block_phase_interrupts;
  return PrintRunRecord(record, options.json);
}

}  // namespace sigvisor::cli
