// The machine configuration of a run, built in one place for `sigvisor run` and
// `trace`, the bench's runs (x86-64 under KVM) and `run --arch mips` and study tramp
// (the MIPS interpreter): memory, watchdog, console output and the seccomp sandbox
// are decided here, from values the callers parsed or chose.
#ifndef SIGVISOR_VMM_APP_LAUNCH_RUN_SETTINGS_H_
#define SIGVISOR_VMM_APP_LAUNCH_RUN_SETTINGS_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "arch/mips/vmm/mips_machine.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/trap/trap_engine.h"
#include "vmm/inject/injection_record.h"
#include "vmm/inject/injection_spec.h"

namespace sigvisor::launch {

// The guest's console echoed to a stream as it arrives. It remembers whether the last
// byte written ended a line, so that what sigvisor prints after the run (the report,
// the outcome line) can start on a line of its own after a guest that left one open.
class ConsoleEcho {
 public:
  explicit ConsoleEcho(FILE* stream) : stream_(stream) {}
  ConsoleEcho(const ConsoleEcho&) = delete;
  ConsoleEcho& operator=(const ConsoleEcho&) = delete;

  // Writes `text` and flushes (the console is watched live). Called on the run loop's
  // thread (or a vCPU's).
  void Write(std::string_view text);
  // Ends the guest's last line if it left one open; call once the run is over.
  void EndLine();

 private:
  FILE* stream_;
  std::atomic<bool> mid_line_{false};
};

// What every run decides the same way, whichever command, bench or study starts it.
struct RunSettings {
  uint64_t memory_mib = 32;
  absl::Duration timeout = absl::Seconds(60);
  uint64_t max_output_bytes = uint64_t{64} << 20;  // console bytes echoed at most
  bool sandbox = true;       // the run loop in the seccomp allowlist (false: --no-sandbox)
  bool gdb_sockets = false;  // the allowlist lets the gdb stub's socket I/O through
  ConsoleEcho* console = nullptr;  // where the console is echoed (outlives the run); null: nowhere
};

// What an x86-64 run boots with, besides the settings.
struct X86Guest {
  std::string cmdline;
  bool cpl0_emulated = false;  // the host emulates guest CPL0 (the guest is told)
  TrapMechanism trap = TrapMechanism::kOff;
  // Check each phase's two clocks at the guest TSC's rate (which the machine asks its
  // vCPU for); false where the guest does not run in real time (single-stepped by trace).
  bool check_clocks = false;
};

x86::MachineConfig MachineConfigFor(const RunSettings& run, X86Guest guest);

// --inject: adds the fault injector for `specs` (drawing `random` points from
// `seed`) to `config`; its records go to `records`, which must outlive the run. Does
// nothing without specs.
void AddFaultInjector(x86::MachineConfig& config, std::vector<InjectionSpec> specs,
                      uint64_t seed, std::vector<InjectionRecord>* records);

// The MIPS interpreter's machine: `cores` emulated cores.
mips::MipsMachineConfig MipsMachineConfigFor(const RunSettings& run, std::string cmdline,
                                             int cores);

}  // namespace sigvisor::launch

#endif  // SIGVISOR_VMM_APP_LAUNCH_RUN_SETTINGS_H_
