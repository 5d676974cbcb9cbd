#include "vmm/app/launch/run_settings.h"

#include "arch/x86_64/vmm/inject/fault_injector.h"
#include "vmm/sandbox/seccomp_filter.h"

namespace sigvisor::launch {
namespace {

// The session options every machine shares.
void ApplySettings(const RunSettings& run, SessionOptions& session) {
  session.timeout = run.timeout;
  session.max_output_bytes = run.max_output_bytes;
  if (run.sandbox) session.sandbox = SandboxPolicy{.allow_gdb_sockets = run.gdb_sockets};
  if (run.console != nullptr) {
    session.console_sink = [console = run.console](std::string_view text) {
      console->Write(text);
    };
  }
}

}  // namespace

void ConsoleEcho::Write(std::string_view text) {
  if (text.empty()) return;
  std::fwrite(text.data(), 1, text.size(), stream_);
  std::fflush(stream_);
  mid_line_ = text.back() != '\n';
}

void ConsoleEcho::EndLine() {
  if (mid_line_.exchange(false)) {
    std::fputc('\n', stream_);
    std::fflush(stream_);
  }
}

x86::MachineConfig MachineConfigFor(const RunSettings& run, X86Guest guest) {
  x86::MachineConfig config;
  config.memory_bytes = run.memory_mib << 20;
  config.cmdline = std::move(guest.cmdline);
  config.cpl0_emulated = guest.cpl0_emulated;
  config.trap = guest.trap;
  config.check_clocks = guest.check_clocks;
  ApplySettings(run, config.session);
  return config;
}

void AddFaultInjector(x86::MachineConfig& config, std::vector<InjectionSpec> specs,
                      uint64_t seed, std::vector<InjectionRecord>* records) {
  if (specs.empty()) return;
  config.injection_events = true;
  config.interceptors.push_back(
      x86::FaultInjectorFactory({.specs = std::move(specs), .seed = seed}, records));
}

mips::MipsMachineConfig MipsMachineConfigFor(const RunSettings& run, std::string cmdline,
                                             int cores) {
  mips::MipsMachineConfig config;
  config.memory_bytes = run.memory_mib << 20;
  config.cores = cores;
  config.cmdline = std::move(cmdline);
  ApplySettings(run, config.session);
  return config;
}

}  // namespace sigvisor::launch
