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
#include "vmm/cli/command.h"
#include "vmm/cli/flags.h"
#include "vmm/images/embedded_images.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"
#include "vmm/probe/probe.h"
#include "vmm/report/json_report.h"
#include "vmm/report/text_report.h"

namespace sigvisor::cli {
namespace {

constexpr uint64_t kMaxImageBytes = 256ull << 20;

struct LoadedImage {
  std::string label;  // for reports
  ElfImage elf;
};

// --image: an embedded image's name, else a file path.
absl::StatusOr<LoadedImage> LoadImage(const std::string& image) {
  if (const EmbeddedImage* embedded = FindEmbeddedImage(image)) {
    absl::StatusOr<ElfImage> elf = ElfImage::Parse(
        std::vector<uint8_t>(embedded->bytes.begin(), embedded->bytes.end()));
    if (!elf.ok()) return elf.status();
    return LoadedImage{absl::StrCat(image, " (embedded)"), *std::move(elf)};
  }
  std::ifstream file(image, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrFormat(
        "cannot open image '%s': %s (give a file path or an embedded image name: see "
        "`sigvisor images`)",
        image, strerror(errno)));
  }
  std::vector<uint8_t> bytes;
  char buffer[65536];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    bytes.insert(bytes.end(), buffer, buffer + file.gcount());
    if (bytes.size() > kMaxImageBytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("image '%s' is larger than %d MiB", image, kMaxImageBytes >> 20));
    }
  }
  if (file.bad()) return absl::DataLossError(absl::StrFormat("cannot read image '%s'", image));
  absl::StatusOr<ElfImage> elf = ElfImage::Parse(std::move(bytes));
  if (!elf.ok()) {
    return absl::Status(elf.status().code(),
                        absl::StrFormat("image '%s': %s", image, elf.status().message()));
  }
  return LoadedImage{image, *std::move(elf)};
}

// The guest command line from --workload, --ops and --cmdline.
absl::StatusOr<std::string> GuestCmdline() {
  std::vector<std::string> words;
  const std::string workload = absl::GetFlag(FLAGS_workload);
  if (!workload.empty()) {
    if (workload.find_first_of(" =") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--workload '%s': a workload name has no spaces or '='", workload));
    }
    words.push_back("workload=" + workload);
  }
  const std::string ops = absl::GetFlag(FLAGS_ops);
  if (!ops.empty()) {
    uint64_t count;
    if (!absl::SimpleAtoi(ops, &count)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--ops '%s' is not a count (a whole number >= 0)", ops));
    }
    words.push_back(absl::StrCat("ops=", count));
  }
  const std::string extra = absl::GetFlag(FLAGS_cmdline);
  if (!extra.empty()) words.push_back(extra);
  return absl::StrJoin(words, " ");
}

}  // namespace

int RunCommand(std::span<char* const> args) {
  const uint64_t start_ns = MonotonicNs();
  if (!args.empty()) {
    return ReportError(absl::StrFormat("`sigvisor run` takes no argument '%s' (see --help)",
                                       args[0]));
  }
  const bool json = absl::GetFlag(FLAGS_json);
  const absl::Duration timeout = absl::GetFlag(FLAGS_timeout);
  if (timeout <= absl::ZeroDuration()) return ReportError("--timeout must be positive");

  absl::StatusOr<std::string> cmdline = GuestCmdline();
  if (!cmdline.ok()) return ReportError(cmdline.status());
  absl::StatusOr<LoadedImage> image = LoadImage(absl::GetFlag(FLAGS_image));
  if (!image.ok()) return ReportError(image.status());
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open(absl::GetFlag(FLAGS_kvm));
  if (!kvm.ok()) return ReportError(kvm.status());
  absl::StatusOr<HostInfo> host = DetectHost(*kvm);
  if (!host.ok()) return ReportError(host.status());

  x86::MachineConfig config;
  config.memory_bytes = uint64_t{absl::GetFlag(FLAGS_memory)} << 20;
  config.cmdline = *cmdline;
  config.cpl0_emulated = host->cpl0_emulated;
  config.session.timeout = timeout;
  // With --json, stdout carries only the JSON document: the console goes to stderr.
  FILE* console = json ? stderr : stdout;
  if (!absl::GetFlag(FLAGS_quiet)) {
    config.session.console_sink = [console](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), console);
      std::fflush(console);
    };
  }
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm, image->elf, config);
  if (!report.ok()) return ReportError(report.status());

  RunRecord record;
  record.image = image->label;
  record.cmdline = *cmdline;
  record.host = {host->kind, host->cpl0_emulated};
  record.result = std::move(report->result);
  record.vm_create_ns = report->vm_create_ns;
  record.setup_ns = report->setup_ns;
  record.wall_ns = MonotonicNs() - start_ns;

  if (json) {
    std::printf("%s\n", RunRecordToJson(record).dump(2).c_str());
  } else {
    std::printf("%s", FormatRunReport(record).c_str());
  }
  if (record.result.outcome != Outcome::kExited) {
    std::fprintf(stderr, "sigvisor: %s: %s\n", std::string(OutcomeName(record.result.outcome)).c_str(),
                 record.result.diagnosis.c_str());
  }
  return record.result.exit_code;
}

}  // namespace sigvisor::cli
