// Boot-time benchmark: creates, boots and tears down the bundled guest N times and
// reports the host-kind check `sigvisor run` makes first (DetectHost), VM creation,
// boot (to the guest's first hypercall) and whole-run times as median, min and max,
// and the guest kernel instructions of boot and of the whole run (exact, where the
// host counts them: insn_emulation on PVM). Firecracker's lesson: a boot number users
// can trust is one measured many times, with its spread. Times only; tests assert
// counts, never this. The whole process, loader included, is perf/startup.sh's.
//
//   bazel run -c opt //perf:boot_time -- --runs 50 [--workload hello] [--json]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/base/clock.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"

ABSL_FLAG(int, runs, 30, "VMs to create, boot and tear down");
ABSL_FLAG(std::string, workload, "hello", "the bundled kernel's workload");
ABSL_FLAG(bool, json, false, "print JSON");

namespace sigvisor {
namespace {

struct Spread {
  double median_us, min_us, max_us;
};

Spread Summarize(std::vector<uint64_t> ns) {
  std::sort(ns.begin(), ns.end());
  return {ns[ns.size() / 2] / 1e3, ns.front() / 1e3, ns.back() / 1e3};
}

int Main() {
  const int runs = absl::GetFlag(FLAGS_runs);
  if (runs < 1) {
    std::fprintf(stderr, "boot_time: --runs must be at least 1\n");
    return 2;
  }
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
  if (!kvm.ok()) {
    std::fprintf(stderr, "boot_time: %s\n", std::string(kvm.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<ElfImage> image = ParseKernel(KernelVariants()[0]);
  if (!image.ok()) return 2;

  x86::MachineConfig config;
  config.cmdline = "workload=" + absl::GetFlag(FLAGS_workload);
  std::vector<uint64_t> detect, create, boot, run, total;
  // Guest kernel instructions: the same every run (a count), so the last run's.
  uint64_t boot_insns = 0, run_insns = 0;
  bool counted = false;
  for (int i = 0; i < runs; ++i) {
    const uint64_t detect_start = MonotonicNs();
    absl::StatusOr<HostInfo> host = DetectHost(*kvm);
    detect.push_back(MonotonicNs() - detect_start);
    if (!host.ok()) {
      std::fprintf(stderr, "boot_time: %s\n", std::string(host.status().message()).c_str());
      return 1;
    }
    config.cpl0_emulated = host->cpl0_emulated;
    const uint64_t start = MonotonicNs();
    absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm, *image, config);
    const uint64_t end = MonotonicNs();
    if (!report.ok() || report->result.outcome != Outcome::kExited) {
      std::fprintf(stderr, "boot_time: run %d failed: %s\n", i,
                   report.ok() ? report->result.diagnosis.c_str()
                               : std::string(report.status().message()).c_str());
      return 1;
    }
    const auto boot_count = report->result.boot_kvm_stats.find("insn_emulation");
    const auto run_count = report->result.kvm_stats.find("insn_emulation");
    counted = host->cpl0_emulated && boot_count != report->result.boot_kvm_stats.end() &&
              run_count != report->result.kvm_stats.end();
    if (counted) {
      boot_insns = boot_count->second;
      run_insns = run_count->second;
    }
    create.push_back(report->vm_create_ns);
    boot.push_back(report->result.first_hypercall_ns);
    run.push_back(report->result.run_ns);
    total.push_back(end - start);
    if (runs >= 20 && (i + 1) % 10 == 0) std::fprintf(stderr, "  %d/%d\n", i + 1, runs);
  }
  const std::pair<const char*, Spread> rows[] = {
      {"detect_host", Summarize(detect)},
      {"vm_create", Summarize(create)},
      {"boot_to_first_hypercall", Summarize(boot)},
      {"guest_run", Summarize(run)},
      {"create_boot_run_teardown", Summarize(total)},
  };
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::ordered_json doc = {{"runs", runs}, {"workload", absl::GetFlag(FLAGS_workload)}};
    for (const auto& [name, s] : rows) {
      doc[name] = {{"median_us", s.median_us}, {"min_us", s.min_us}, {"max_us", s.max_us}};
    }
    doc["kernel_insns"] = counted ? nlohmann::ordered_json{{"boot", boot_insns}, {"run", run_insns}}
                                  : nlohmann::ordered_json(nullptr);
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::printf("%d runs of the bundled kernel (workload %s)\n", runs,
                absl::GetFlag(FLAGS_workload).c_str());
    std::printf("  %-26s %10s %10s %10s\n", "us", "median", "min", "max");
    for (const auto& [name, s] : rows) {
      std::printf("  %-26s %10.1f %10.1f %10.1f\n", name, s.median_us, s.min_us, s.max_us);
    }
    if (counted) {
      std::printf("  guest kernel instructions: boot %lu, whole run %lu\n",
                  static_cast<unsigned long>(boot_insns), static_cast<unsigned long>(run_insns));
    } else {
      std::printf("  guest kernel instructions: not counted here (guest CPL0 not emulated)\n");
    }
  }
  return 0;
}

}  // namespace
}  // namespace sigvisor

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return sigvisor::Main();
}
