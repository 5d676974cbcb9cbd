// What the commands that boot a guest decide from their flags the same way (`run`,
// `trace`; `bench` and `study` for the host): the trap mechanism from --trap, the host
// opened, the guest request from the flags (vmm/app/launch makes the run of it), and
// the rest of `run`'s set-up.
#ifndef SIGVISOR_VMM_APP_CLI_RUN_SETUP_H_
#define SIGVISOR_VMM_APP_CLI_RUN_SETUP_H_

#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "arch/x86_64/vmm/trap/trap_engine.h"
#include "vmm/app/cli/options.h"
#include "vmm/app/launch/guest_spec.h"
#include "vmm/app/launch/image.h"
#include "vmm/app/launch/run_settings.h"
#include "vmm/inject/injection_record.h"
#include "vmm/inject/injection_spec.h"
#include "vmm/kvm/kvm.h"
#include "vmm/report/run_record.h"
#include "vmm/run/trap_mechanism.h"
#include "vmm/snapshot/snapshot_header.h"

namespace sigvisor::cli {

// What --trap and --traps take besides a mechanism's name: the CLI's own choice.
inline constexpr std::string_view kAutoTrapName = "auto";

// A --trap or --traps value: the mechanism it names, or auto, resolved to a mechanism
// here, once (AutoTrap), so that nothing past the CLI sees auto.
struct TrapRequest {
  TrapMechanism mechanism = TrapMechanism::kOff;
  bool automatic = false;  // the flag said auto; `mechanism` is what auto took

  // As the flag gave it: "auto" or the mechanism's name.
  std::string_view name() const {
    return automatic ? kAutoTrapName : TrapMechanismName(mechanism);
  }
};

// --trap=auto (see run_setup.cc for why it takes what it takes).
TrapRequest AutoTrap();

// `text` as --trap and --traps read it; nullopt when it is neither a mechanism nor
// auto (each flag words its own refusal).
std::optional<TrapRequest> ParseTrapRequest(std::string_view text);

// --trap (`flag`) without the host, or the refusal of a name that is none.
absl::StatusOr<TrapRequest> ParseTrapFlag(const std::string& flag);

struct TrapChoice {
  TrapMechanism mechanism = TrapMechanism::kOff;
  std::string reason;
};

// What `request` runs as on this host, and why (see run_setup.cc); an hw-gd the
// host cannot give is refused.
absl::StatusOr<TrapChoice> ChooseTrap(const TrapRequest& request, const KvmSystem& kvm,
                                      const HostInfo& host);

// The host a run uses: the KVM device (--kvm) opened, what kind of host it is, and
// --trap resolved.
struct RunHost {
  KvmSystem kvm;
  HostInfo info;
  TrapChoice trap;
};
absl::StatusOr<RunHost> OpenRunHost(const std::string& kvm_path, const std::string& trap);

// The settings every run shares (vmm/app/launch/run_settings.h), from the flags each
// command has: `console` is where the guest's console is echoed (null: nowhere).
template <typename Options>
launch::RunSettings SettingsFrom(const Options& options, launch::ConsoleEcho* console) {
  return {.memory_mib = options.memory_mib,
          .timeout = options.timeout,
          .sandbox = !options.no_sandbox,
          .console = console};
}

// `sigvisor run`'s settings, x86-64 and MIPS alike: the console echoed to `console`
// unless --quiet, at most --max-output bytes of it; the sandbox lets --gdb's socket
// through.
launch::RunSettings RunSettingsFor(const RunOptions& options, launch::ConsoleEcho& console);

// The build of the bundled kernel that `run` and `snapshot` boot: --variant's, or with
// --vcpus N > 1 and no --variant the baseline's SMP build (a uniprocessor one given by
// name is then refused by name, by the board).
std::string VariantToBoot(const CommandLine& flags, const std::string& image,
                          const std::string& variant, int vcpus);

// --vcpus, --ipi and --lapic (empty: their defaults) into `config`; a name that is
// neither way is refused naming the choices. The board refuses what the guest cannot do.
absl::Status SetSmpMachine(int vcpus, const std::string& ipi, const std::string& lapic,
                           x86::MachineConfig& config);

// What `run`'s flags ask of the guest (vmm/app/launch/guest_spec.h).
launch::GuestRequest GuestRequestFor(const RunOptions& options);

// Where `run` echoes the guest's console: stdout, or stderr with --json (stdout then
// carries only the document).
inline FILE* RunConsoleStream(const RunOptions& options) {
  return options.json ? stderr : stdout;
}

// --gdb [ADDR:]PORT: adds the gdb stub to `config` (its socket is bound now, so an
// address in use is refused before boot) and, unless --timeout was given, turns the
// watchdog off (a debugged guest may sit at a breakpoint for as long as its user
// likes); a --timeout given bounds the wait for gdb too, and config.session.interrupt
// (set before this call) ends that wait. An embedded image is written to a temporary
// file for gdb's symbols; `symbols_file` receives its path (to remove after the run),
// or "". Does nothing without --gdb.
absl::Status AddGdbStub(x86::MachineConfig& config, const RunOptions& options,
                        const launch::LoadedImage& image, std::string* symbols_file);

// The --inject specs (empty without the flag); a malformed one is an error naming
// the part that is wrong.
absl::StatusOr<std::vector<InjectionSpec>> ParseInjectionSpecs(
    const std::vector<std::string>& inject);

// The report of an x86-64 run of `image` on `host` (`sigvisor run`, booted or restored);
// `start_ns` is when the command started.
RunRecord RecordOf(const launch::LoadedImage& image, const RunHost& host,
                   x86::MachineReport report, uint64_t start_ns);

// Prints `record` (the JSON document with --json, else the text report) and returns
// the run's exit status (ReportRunEnd).
int PrintRunRecord(const RunRecord& record, bool json);

// After a run: the stderr line for a guest that failed (its outcome and diagnosis) or
// whose status cannot pass through (exit_status.h), and the exit status.
// `bundled_kernel`: the image is a build of the bundled kernel.
int ReportRunEnd(const RunResult& result, bool bundled_kernel);

// `sigvisor run --arch mips` (run_mips.cc): the same report from the MIPS
// interpreter; `start_ns` is when the command started.
int RunMips(const RunOptions& options, uint64_t start_ns);

// `sigvisor run --restore DIR` (run_restore.cc): the snapshot's VM restored instead of
// booted, with the same report; `start_ns` is when the command started.
int RunRestored(const RunOptions& options, uint64_t start_ns);

// A snapshot a command restores instead of booting (run --restore, trace --restore;
// docs/snapshots.md), read and checked as a file, before KVM is opened.
struct SnapshotToRestore {
  std::string dir;
  SnapshotHeader header;
  // The image the snapshot names, loaded; its target is the restored VM, so that a run
  // of it restores rather than boots.
  launch::LoadedImage image;
  uint32_t memory_mib = 0;  // the snapshot's guest RAM
  std::string trap;         // --trap as given, else the mechanism it was booted with
};

// Reads the snapshot in `dir` for a command whose flags are `flags` (its --trap:
// `trap_flag`). Refused by name: a flag the restored guest cannot honour (--image,
// --variant, --cmdline, --memory, ... of those the command has), since it keeps what it
// was booted with. A Linux kernel's file is read and hashed but not decompressed unless
// `reads_kernel_code` (trace: it names the kernel's code by its symbols): a restored
// Linux runs from its snapshot.
absl::StatusOr<SnapshotToRestore> ReadSnapshotToRestore(const std::string& dir,
                                                        const CommandLine& flags,
                                                        const std::string& trap_flag,
                                                        bool reads_kernel_code);

// The snapshot's host kind, guest ABI and architecture against the host opened.
absl::Status CheckRestoreHere(const SnapshotToRestore& snapshot, const RunHost& host);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_RUN_SETUP_H_
