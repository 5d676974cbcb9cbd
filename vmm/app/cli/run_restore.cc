// `sigvisor run --restore DIR`: the VM `sigvisor snapshot` saved, restored instead of
// booted, its guest given this run's orders (docs/snapshots.md).
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
// name rather than silently ignored.
constexpr std::string_view kFixedBySnapshot[] = {"image",   "variant", "cmdline", "memory", "vcpus",
                                                 "irqchip", "module",  "initrd",  "inject", "seed",
                                                 "gdb",     "arch",    "cores"};

}  // namespace

int RunRestored(const RunOptions& options, uint64_t start_ns) {
  if (std::string flag = FirstGiven(options, kFixedBySnapshot); !flag.empty()) {
    return ReportError(absl::StrFormat(
        "%s with --restore: a restored guest keeps what it was booted with (see `sigvisor "
        "help snapshot`); take a snapshot with it instead",
        flag));
  }
  absl::StatusOr<x86::SavedVm> saved = x86::ReadSavedVm(options.restore);
  if (!saved.ok()) return ReportError(saved.status());
  const SnapshotHeader header = saved->header;  // a copy: `saved` moves into the target
  absl::StatusOr<launch::LoadedImage> image = launch::LoadImage(header.image, header.variant);
  if (!image.ok()) {
    return ReportError(absl::StrFormat("snapshot %s names image '%s': %s", options.restore,
                                       header.image, image.status().message()));
  }
  // The orders, in the words of the kernel that was saved (a sigvisor kernel's).
  launch::GuestRequest request = GuestRequestFor(options);
  request.memory_mib = header.memory_bytes >> 20;
  request.memory_given = true;
  absl::StatusOr<launch::GuestSpec> guest = launch::PrepareGuest(*image, request);
  if (!guest.ok()) return ReportError(guest.status());
  // Without --trap, the mechanism the snapshot was booted with (a pv kernel's is pv).
  const std::string trap = options.Given("trap") ? options.trap : header.trap;
  absl::StatusOr<TrapRequest> trap_request = ParseTrapFlag(trap);
  if (!trap_request.ok()) return ReportError(trap_request.status());

  launch::ConsoleEcho console(RunConsoleStream(options));
  launch::RunSettings settings = RunSettingsFor(options, console);
  settings.memory_mib = header.memory_bytes >> 20;
  x86::MachineConfig config = launch::MachineConfigFor(
      settings, {.cmdline = guest->cmdline, .trap = trap_request->mechanism, .check_clocks = true});
  config.target = x86::RestoredVm{std::make_shared<const x86::SavedVm>(*std::move(saved))};
  config.check_signal_frames = options.check_signal_frames;
  config.block_phase_interrupts = options.block_phase_interrupts;
  InstallRunInterruptHandler();
  config.session.interrupt = RunInterruptFlag();
  if (absl::Status s = x86::CheckMachineConfig(image->elf, config); !s.ok()) {
    return ReportError(s);
  }

  absl::StatusOr<RunHost> run_host = OpenRunHost(options.kvm, trap);
  if (!run_host.ok()) return ReportError(run_host.status());
  if (absl::Status s = CheckRestoreHost(
          header,
          {.abi_version = SIGVISOR_ABI_VERSION, .arch = "x86_64", .host_kind = run_host->info.kind},
          options.restore);
      !s.ok()) {
    return ReportError(s);
  }
  config.cpl0_emulated = run_host->info.cpl0_emulated;
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(run_host->kvm, image->elf, config);
  console.EndLine();
  if (!report.ok()) return ReportError(report.status());

  RunRecord record = RecordOf(*image, *run_host, *std::move(report), start_ns);
  record.restored_from = options.restore;
  record.phase_interrupts_blocked = options.block_phase_interrupts;
  return PrintRunRecord(record, options.json);
}

}  // namespace sigvisor::cli
