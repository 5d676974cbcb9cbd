// `sigvisor run`: boot one guest and report what it cost.
#include <fstream>
#include <iterator>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/run_interrupt.h"
#include "vmm/app/cli/run_setup.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/image.h"
#include "vmm/base/clock.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor::cli {

namespace {

// Flags of one architecture's guests, refused with the other's (as the run would
// ignore them).
constexpr std::string_view kX86Only[] = {"kvm",
                                         "trap",
                                         "gdb",
                                         "module",
                                         "initrd",
                                         "irqchip",
                                         "vcpus",
                                         "ipi",
                                         "lapic",
                                         "inject",
                                         "seed",
                                         "check_signal_frames",
                                         "block_phase_interrupts"};
constexpr std::string_view kMipsOnly[] = {"cores"};

}  // namespace

// `sigvisor help`'s line for `run`, and what `sigvisor help run` prints above
// the flags (RunFlags, options.cc).
constexpr CommandHelp kRunHelp{
    "boot a guest, stream its console, report its VM exits",
    "Boots a guest (by default the bundled kernel) in a fresh KVM VM and streams its\n"
    "console. At the end it prints the outcome, the exit table (per reason: count,\n"
    "mean and max VMM handling time), KVM's own statistics and one block per phase the\n"
    "guest measured (BEGIN/END markers), per operation. Exit status: the guest's own\n"
    "(0-122); 123 when the guest's status is above 122 (the report gives it); 124 when\n"
    "the guest failed (triple fault, panic, timeout, ...), with a one-line diagnosis on\n"
    "stderr; 125 when sigvisor failed (bad input, no KVM, ...): see `sigvisor help`.\n"
    "Ctrl-C (or SIGTERM) stops the guest and reports what it measured until then\n"
    "(outcome interrupted, status 124); a second one quits at once.\n"
    "\nWith --trap, the guest's debug-register accesses and segment-register loads\n"
    "trap to the VMM, which emulates them (DR7 lazily) and counts them by kind and\n"
    "site, per phase and per op. auto picks patch (see docs/traps.md).\n"
    "\nExamples:\n"
    "  sigvisor run\n"
    "  sigvisor run --workload console --ops 100 --json\n"
    "  sigvisor run --workload divzero --ops 100 --trap=auto\n"
    "  sigvisor run --image path/to/guest.elf --timeout 5s\n"
    "  sigvisor run --image multiboot-kernel.elf --cmdline 'a=1' --module initrd=init\n"
    "     (a Multiboot v1 kernel, booted as `qemu-system-x86_64 -kernel` boots it)\n"
    "  sigvisor run --image smp-kernel.elf --vcpus 4\n"
    "     (APs started by the kernel's INIT/SIPI through the in-kernel LAPIC)\n"
    "  sigvisor run --vcpus 2 --variant smp=on --workload divzero --ipi pv\n"
    "     (the bundled kernel built with smp=on on two vCPUs, its IPIs through the VMM)\n"
    "  sigvisor run --restore DIR --workload divzero --ops 16\n"
    "     (a VM `sigvisor snapshot --out DIR` saved, restored instead of booted)\n"
    "  sigvisor run --workload divzero --gdb 1234   (then: gdb FILE -ex 'target remote :1234')\n"
    "  sigvisor run --workload lat_sig --inject sig=usr1,op=3,phase=sig_hndl --json\n"
    "     (fault injection: exceptions, host signals, page faults; see docs/inject.md)\n"
    "  sigvisor run --arch mips --variant tramp=vdso --cores 4 --workload lat_sig\n"
    "     (the bundled MIPS kernel on sigvisor's MIPS32r2 interpreter; no KVM needed)",
};

int RunCommand(const RunOptions& options) {
  const uint64_t start_ns = MonotonicNs();
  if (!options.args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor run` takes no argument '%s' (see --help)",
                                       options.args[0]));
  }
  if (options.timeout <= absl::ZeroDuration()) return ReportError("--timeout must be positive");
  if (!options.restore.empty()) return RunRestored(options, start_ns);
  if (options.arch == "mips") {
    if (std::string flag = FirstGiven(options, kX86Only); !flag.empty()) {
      return ReportError(absl::StrFormat(
          "%s is for x86-64 guests under KVM; it does not apply to `sigvisor run --arch mips`",
          flag));
    }
    return RunMips(options, start_ns);
  }
  if (options.arch != "x86_64") {
    return ReportError(absl::StrFormat("--arch=%s: give x86_64 or mips", options.arch));
  }
  if (std::string flag = FirstGiven(options, kMipsOnly); !flag.empty()) {
    return ReportError(absl::StrFormat(
        "%s is for the MIPS interpreter; it applies to `sigvisor run --arch mips` only (x86-64 "
        "Multiboot kernels take --vcpus)",
        flag));
  }

  absl::StatusOr<launch::LoadedImage> image = launch::LoadImage(
      options.image, VariantToBoot(options, options.image, options.variant, options.vcpus));
  if (!image.ok()) return ReportError(image.status());
  absl::StatusOr<launch::GuestSpec> guest = launch::PrepareGuest(*image, GuestRequestFor(options));
  if (!guest.ok()) return ReportError(guest.status());
  // Everything that needs no KVM is refused before /dev/kvm is opened, so that bad
  // input is named as such on any machine.
  absl::StatusOr<TrapRequest> trap_request = ParseTrapFlag(options.trap);
  if (!trap_request.ok()) return ReportError(trap_request.status());
  if (options.check_signal_frames &&
      image->variant_settings.find("signal=pv") == std::string::npos) {
    return ReportError(absl::StrFormat(
        "--check-signal-frames compares the frames the VMM builds for a signal=pv kernel; %s "
        "makes none: add --variant signal=pv (or accelerated,signal=pv)",
        image->label));
  }
  absl::StatusOr<std::vector<InjectionSpec>> specs = ParseInjectionSpecs(options.inject);
  if (!specs.ok()) return ReportError(specs.status());

  launch::ConsoleEcho console(RunConsoleStream(options));
  launch::RunSettings settings = RunSettingsFor(options, console);
  settings.memory_mib = guest->memory_mib;
  // The guest's TSC runs in real time: each phase's two clocks are checked at its rate.
  // Whether the host emulates CPL0 is known once KVM is open (below).
  x86::MachineConfig config = launch::MachineConfigFor(
      settings, {.cmdline = guest->cmdline, .trap = trap_request->mechanism, .check_clocks = true});
  config.target = std::move(image->target);
  if (absl::Status s = SetSmpMachine(options.vcpus, options.ipi, options.lapic, config); !s.ok()) {
    return ReportError(s);
  }
  config.check_signal_frames = options.check_signal_frames;
  config.block_phase_interrupts = options.block_phase_interrupts;
  config.report_guest_memory = true;  // the run's report has guest_memory
  // Ctrl-C or SIGTERM from here on stops the guest and reports the run as interrupted
  // (run_interrupt.h); a second one ends the process at once.
  InstallRunInterruptHandler();
  config.session.interrupt = RunInterruptFlag();
  std::string gdb_symbols;  // --gdb: the image written out for gdb, removed at the end
  absl::Cleanup remove_gdb_symbols = [&gdb_symbols] {
    RemoveOnInterrupt("");
    if (!gdb_symbols.empty()) std::remove(gdb_symbols.c_str());
  };
  if (absl::Status s = AddGdbStub(config, options, *image, &gdb_symbols); !s.ok()) {
    return ReportError(s);
  }
  // Removed by the signal handler too: a second Ctrl-C ends the process before the
  // clean-up above runs.
  RemoveOnInterrupt(gdb_symbols);
  std::vector<InjectionRecord> injections;
  launch::AddFaultInjector(config, *std::move(specs), options.seed, &injections);
  if (absl::Status s = x86::CheckMachineConfig(image->elf, config); !s.ok()) {
    return ReportError(s);
  }

  absl::StatusOr<RunHost> run_host = OpenRunHost(options.kvm, options.trap);
  if (!run_host.ok()) return ReportError(run_host.status());
  config.cpl0_emulated = run_host->info.cpl0_emulated;
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(run_host->kvm, image->elf, config);
  std::move(remove_gdb_symbols).Invoke();
  console.EndLine();
  if (!report.ok()) return ReportError(report.status());

  RunRecord record = RecordOf(*image, *run_host, *std::move(report), start_ns);
  record.injections = std::move(injections);
  record.inject_seed = options.seed;
  record.phase_interrupts_blocked = options.block_phase_interrupts;
  return PrintRunRecord(record, options.json);
}

}  // namespace sigvisor::cli
