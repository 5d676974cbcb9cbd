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
#include "vmm/bench/peer.h"
#include "vmm/cli/build_info/build_info.h"
#include "vmm/cli/command.h"
#include "vmm/cli/flags.h"
#include "vmm/cli/image_arg.h"
#include "vmm/cli/run_setup.h"
#include "vmm/kvm/kvm.h"
#include "vmm/probe/probe.h"
#include "vmm/report/json_report.h"
#include "vmm/report/text_report.h"

namespace sigvisor::cli {

int RunCommand(std::span<char* const> args) {
  const uint64_t start_ns = MonotonicNs();
  if (!args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor run` takes no argument '%s' (see --help)",
                                       args[0]));
  }
  const bool json = absl::GetFlag(FLAGS_json);
  const absl::Duration timeout = absl::GetFlag(FLAGS_timeout);
  if (timeout <= absl::ZeroDuration()) return ReportError("--timeout must be positive");
  const std::string arch = absl::GetFlag(FLAGS_arch);
  if (arch == "mips") return RunMips(start_ns);
  if (arch != "x86_64") {
    return ReportError(absl::StrFormat("--arch=%s: give x86_64 or mips", arch));
  }

  absl::StatusOr<std::string> cmdline = GuestCmdline();
  if (!cmdline.ok()) return ReportError(cmdline.status());
  absl::StatusOr<LoadedImage> image = LoadImage(absl::GetFlag(FLAGS_image), absl::GetFlag(FLAGS_variant));
  if (!image.ok()) return ReportError(image.status());
  absl::StatusOr<RunHost> run_host = OpenRunHost();
  if (!run_host.ok()) return ReportError(run_host.status());
  const KvmSystem* kvm = &run_host->kvm;
  const HostInfo* host = &run_host->info;
  const TrapChoice* trap = &run_host->trap;

  x86::MachineConfig config;
  config.memory_bytes = uint64_t{absl::GetFlag(FLAGS_memory)} << 20;
  config.cmdline = *cmdline;
  config.cpl0_emulated = host->cpl0_emulated;
  config.trap = trap->mechanism;
  config.irqchip = absl::GetFlag(FLAGS_irqchip);
  config.vcpus = absl::GetFlag(FLAGS_vcpus);
  if (image->elf.multiboot() && !image->elf.abi_version()) {  // a Multiboot kernel
    config.image_name = image->label;
    for (const std::string& spec : absl::GetFlag(FLAGS_module)) {
      absl::StatusOr<x86::MultibootModule> module = x86::ReadMultibootModule(spec);
      if (!module.ok()) return ReportError(module.status());
      config.modules.push_back(*std::move(module));
    }
  } else if (!absl::GetFlag(FLAGS_module).empty()) {
    return ReportError("--module passes modules to a Multiboot kernel; this image is not one");
  }
  config.session.timeout = timeout;
  config.session.max_output_bytes = absl::GetFlag(FLAGS_max_output);
  // The guest's TSC runs at the host's rate: each phase's two clocks are checked at it.
  config.session.guest_tsc_khz = bench::HostTscKhz(kvm->fd());
  if (!absl::GetFlag(FLAGS_no_sandbox)) {
    config.session.sandbox = SandboxPolicy{.allow_gdb_sockets = !absl::GetFlag(FLAGS_gdb).empty()};
  }
  // With --json, stdout carries only the JSON document: the console goes to stderr.
  FILE* console = json ? stderr : stdout;
  if (!absl::GetFlag(FLAGS_quiet)) {
    config.session.console_sink = [console](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), console);
      std::fflush(console);
    };
  }
  std::string gdb_symbols;  // --gdb: the image written out for gdb, removed at the end
  if (absl::Status s = AddGdbStub(config, *image, *host, &gdb_symbols); !s.ok()) {
    return ReportError(s);
  }
  std::vector<InjectionRecord> injections;
  if (absl::Status s = AddFaultInjector(config, &injections); !s.ok()) return ReportError(s);
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm, image->elf, config);
  if (!gdb_symbols.empty()) std::remove(gdb_symbols.c_str());
  if (!report.ok()) return ReportError(report.status());

  RunRecord record;
  record.image = image->label;
  record.variant = image->variant;
  record.variant_settings = image->variant_settings;
  record.cmdline = *cmdline;
  record.host = {host->kind, host->cpl0_emulated};
  record.guest_makes_hypercalls = !(image->elf.multiboot() && !image->elf.abi_version());
  record.trap = {std::string(x86::TrapMechanismName(trap->mechanism)), trap->reason,
                 report->trap_sites};
  record.result = std::move(report->result);
  record.vm_create_ns = report->vm_create_ns;
  record.setup_ns = report->setup_ns;
  record.wall_ns = MonotonicNs() - start_ns;
  record.injections = std::move(injections);
  record.inject_seed = absl::GetFlag(FLAGS_seed);

  if (json) {
    std::printf("%s\n", WithBuildInfo(RunRecordToJson(record)).dump(2).c_str());
  } else {
    std::printf("%s", FormatRunReport(record).c_str());
  }
  return ReportRunEnd(record.result, !record.variant.empty());
}

}  // namespace sigvisor::cli
