// What every command that boots the bundled kernel's workloads decides the same way
// (`run`, `trace`): the guest command line from --workload/--ops/--cmdline, the trap
// mechanism from --trap, and the rest of `run`'s set-up.
#ifndef SIGVISOR_VMM_APP_CLI_RUN_SETUP_H_
#define SIGVISOR_VMM_APP_CLI_RUN_SETUP_H_

#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/trap/trap_engine.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "vmm/app/cli/image_arg.h"
#include "vmm/app/cli/machine_config/machine_config.h"
#include "vmm/app/cli/options.h"
#include "vmm/inject/injection_record.h"
#include "vmm/inject/injection_spec.h"
#include "vmm/kvm/kvm.h"
#include "arch/x86_64/vmm/probe/probe.h"

namespace sigvisor::cli {

// What --workload may name: the bundled kernel's workloads (docs/guest-kernel.md).
std::span<const std::string_view> BundledKernelWorkloads();

// The guest command line from --workload, --ops, --warmup and --cmdline; a --workload
// the bundled kernel does not have is refused, naming the ones it has, and so is a
// --warmup it cannot take (ParseWarmup).
absl::StatusOr<std::string> GuestCmdline(const std::string& workload, const std::string& ops,
                                         const std::string& warmup, const std::string& cmdline);

struct TrapChoice {
  x86::TrapMechanism mechanism = x86::TrapMechanism::kOff;
  std::string reason;
};

// --trap (`flag`): which mechanism, and why (see run_setup.cc).
absl::StatusOr<TrapChoice> ChooseTrap(const std::string& flag, const KvmSystem& kvm,
                                      const HostInfo& host);

// The host a run uses: the KVM device (--kvm) opened, what kind of host it is, and
// --trap resolved.
struct RunHost {
  KvmSystem kvm;
  HostInfo info;
  TrapChoice trap;
};
absl::StatusOr<RunHost> OpenRunHost(const std::string& kvm_path, const std::string& trap);

// The settings every run shares (vmm/app/cli/machine_config), from the flags each
// command has: `console` is where the guest's console is echoed (null: nowhere).
template <typename Options>
RunSettings SettingsFrom(const Options& options, ConsoleEcho* console) {
  return {.memory_mib = options.memory_mib,
          .timeout = options.timeout,
          .sandbox = !options.no_sandbox,
          .console = console};
}

// `sigvisor run`'s settings, x86-64 and MIPS alike: the console echoed to `console`
// unless --quiet, at most --max-output bytes of it; the sandbox lets --gdb's socket
// through.
RunSettings RunSettingsFor(const RunOptions& options, ConsoleEcho& console);

// Where `run` echoes the guest's console: stdout, or stderr with --json (stdout then
// carries only the document).
inline FILE* RunConsoleStream(const RunOptions& options) {
  return options.json ? stderr : stdout;
}

// --gdb [ADDR:]PORT: adds the gdb stub to `config` (its socket is bound now, so an
// address in use is refused before boot) and, unless --timeout was given, turns the
// watchdog off (a debugged guest may sit at a breakpoint for as long as its user
// likes). An embedded image is written to a temporary file for gdb's symbols;
// `symbols_file` receives its path (to remove after the run), or "". Does nothing
// without --gdb.
absl::Status AddGdbStub(x86::MachineConfig& config, const RunOptions& options,
                        const LoadedImage& image, const HostInfo& host,
                        std::string* symbols_file);

// The --inject specs (empty without the flag); a malformed one is an error naming
// the part that is wrong.
absl::StatusOr<std::vector<InjectionSpec>> ParseInjectionSpecs(
    const std::vector<std::string>& inject);

// After a run: the stderr line for a guest that failed (its outcome and diagnosis) or
// whose status cannot pass through (exit_status.h), and the exit status.
// `bundled_kernel`: the image is a build of the bundled kernel.
int ReportRunEnd(const RunResult& result, bool bundled_kernel);

// `sigvisor run --arch mips` (run_mips.cc): the same report from the MIPS
// interpreter; `start_ns` is when the command started.
int RunMips(const RunOptions& options, uint64_t start_ns);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_RUN_SETUP_H_
