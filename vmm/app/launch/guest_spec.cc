#include "vmm/app/launch/guest_spec.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "vmm/app/images/linux_initramfs.h"
#include "vmm/app/launch/warmup.h"
#include "vmm/app/launch/workloads.h"
#include "vmm/base/capped_file.h"

namespace sigvisor::launch {
namespace {

// One kernel's way with the run's words.
struct DialectRules {
  std::vector<std::string> workloads;
  const char* prefix;       // of each parameter's name
  const char* whose;        // "the bundled kernel", in the refusal
  const char* other_image;  // what else --workload could have meant, or ""
};

DialectRules RulesOf(KernelDialect dialect) {
  if (dialect == KernelDialect::kLinuxInit) {
    return {LinuxInitWorkloadNames(), "sigvisor_", "the embedded Linux init", ""};
  }
  return {BundledKernelWorkloadNames(), "", "the bundled kernel",
          "; another image's own: --cmdline workload=NAME"};
}

// The first of `extra`'s words that sets `key` ("ops=7" for "ops"), or "".
std::string WordSetting(const std::string& extra, std::string_view key) {
  for (absl::string_view piece : absl::StrSplit(extra, ' ', absl::SkipEmpty())) {
    const std::string word(piece);
    if (word.starts_with(key) && word.size() > key.size() && word[key.size()] == '=') return word;
  }
  return "";
}

}  // namespace

absl::StatusOr<std::optional<uint64_t>> ParseCount(std::string_view what,
                                                   const std::string& value, uint64_t max) {
  if (value.empty()) return std::optional<uint64_t>();
  uint64_t count;
  if (!absl::SimpleAtoi(value, &count) || count == 0 || count > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s '%s' is not a count from 1 to %d", std::string(what), value, max));
  }
  return std::optional<uint64_t>(count);
}

absl::Status CheckBundledKernelWords(const std::string& extra) {
  const std::string word = WordSetting(extra, "ops");
  if (word.empty()) return absl::OkStatus();
  return ParseCount("--cmdline ops", word.substr(4), kMaxOps).status();
}

KernelDialect DialectOf(const x86::BootTarget& kind) {
  // A restored VM takes its orders in the words of the kernel that was saved.
  if (const auto* restored = std::get_if<x86::RestoredVm>(&kind)) {
    return restored->protocol == x86::BootProtocol::kLinux ? KernelDialect::kLinuxInit
                                                           : KernelDialect::kBundled;
  }
  return std::holds_alternative<x86::LinuxKernel>(kind) ? KernelDialect::kLinuxInit
                                                         : KernelDialect::kBundled;
}

uint64_t GuestMemoryMib(bool linux_kernel, uint64_t memory_mib, bool memory_given) {
  return linux_kernel && !memory_given ? kLinuxDefaultMemoryMib : memory_mib;
}

absl::StatusOr<std::string> GuestWords(KernelDialect kernel, const std::string& workload,
                                       const std::string& ops, const std::string& warmup,
                                       const std::string& extra) {
  const DialectRules dialect = RulesOf(kernel);
  std::vector<std::string> words;
  // A word of --cmdline that sets what a flag sets: the kernel would read one of the two.
  const std::pair<const char*, const std::string*> set_by_flags[] = {
      {"workload", &workload}, {"ops", &ops}, {"warmup", &warmup}};
  for (const auto& [key, flag] : set_by_flags) {
    if (flag->empty()) continue;
    const std::string word = WordSetting(extra, absl::StrCat(dialect.prefix, key));
    if (!word.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--cmdline '%s' and --%s %s both set the guest's %s: give one", word, key, *flag, key));
    }
  }
  if (!workload.empty()) {
    // Refused here, before a VM exists: the guest's own refusal would cost a boot and
    // read as the guest's exit status 127.
    if (std::find(dialect.workloads.begin(), dialect.workloads.end(), workload) ==
        dialect.workloads.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--workload '%s' is not a workload of %s (give one of: %s%s)", workload,
          dialect.whose, absl::StrJoin(dialect.workloads, ", "), dialect.other_image));
    }
    words.push_back(absl::StrCat(dialect.prefix, "workload=", workload));
  }
  if (!ops.empty()) {
    absl::StatusOr<std::optional<uint64_t>> count = ParseCount("--ops", ops, kMaxOps);
    if (!count.ok()) return count.status();
    if (!WorkloadTakesOps(workload)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--ops: workload '%s' has no ops to count (%s run once: give no --ops)", workload,
          absl::StrJoin(WorkloadsWithoutOps(), " and ")));
    }
    words.push_back(absl::StrCat(dialect.prefix, "ops=", **count));
  }
  absl::StatusOr<std::optional<uint64_t>> warmup_ops = ParseWarmup(warmup, workload);
  if (!warmup_ops.ok()) return warmup_ops.status();
  if (*warmup_ops) words.push_back(absl::StrCat(dialect.prefix, "warmup=", **warmup_ops));
  if (!extra.empty()) words.push_back(extra);
  return absl::StrJoin(words, " ");
}

absl::StatusOr<GuestSpec> PrepareGuest(LoadedImage& image, const GuestRequest& request) {
  GuestSpec spec;
  absl::StatusOr<std::string> words =
      GuestWords(DialectOf(image.target), request.workload, request.ops, request.warmup, request.extra);
  if (!words.ok()) return words.status();
  if (absl::Status s = CheckWorkloadVcpus(request.workload, request.vcpus); !s.ok()) return s;
  if (!image.variant.empty()) {  // the bundled kernel
    if (absl::Status s = CheckBundledKernelWords(request.extra); !s.ok()) return s;
  }
  spec.cmdline = *std::move(words);
  x86::LinuxKernel* linux_kernel = image.linux_kernel();
  if (!request.initrd.empty() && linux_kernel == nullptr) {
    return absl::InvalidArgumentError(
        "--initrd is for a Linux kernel (a bzImage); this image is not one");
  }
  if (linux_kernel != nullptr) {
    absl::StatusOr<std::vector<uint8_t>> initrd = LinuxInitrd(request.initrd);
    if (!initrd.ok()) return initrd.status();
    linux_kernel->initrd = *std::move(initrd);
  }
  spec.memory_mib =
      GuestMemoryMib(linux_kernel != nullptr, request.memory_mib, request.memory_given);
  if (absl::Status s = x86::AddMultibootOptions(image.target, image.label, request.irqchip,
                                                request.modules);
      !s.ok()) {
    return s;
  }
  return spec;
}

absl::StatusOr<std::vector<uint8_t>> LinuxInitrd(const std::string& path) {
  if (path.empty()) {
    const std::span<const uint8_t> embedded = EmbeddedLinuxInitramfs();
    return std::vector<uint8_t>(embedded.begin(), embedded.end());
  }
  return ReadCappedFileBytes(path, file_caps::kInitrd, {.context = "--initrd: "});
}

}  // namespace sigvisor::launch
