#include "vmm/app/cli/linux_guest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/app/cli/warmup.h"
#include "vmm/app/images/linux_initramfs.h"

namespace sigvisor::cli {
namespace {

// What guest-kit/linux/init.c runs.
constexpr const char* kLinuxWorkloads[] = {"summary", "all",         "divzero", "lat_sig",
                                           "sigpingpong", "pipe_rw", "selftest"};
constexpr uint64_t kMaxInitrdBytes = 512ull << 20;

}  // namespace

absl::StatusOr<std::string> LinuxGuestCmdline(const std::string& workload,
                                              const std::string& ops, const std::string& warmup,
                                              const std::string& extra) {
  std::vector<std::string> words;
  if (!workload.empty()) {
    if (std::find(std::begin(kLinuxWorkloads), std::end(kLinuxWorkloads), workload) ==
        std::end(kLinuxWorkloads)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--workload '%s' is not a workload of the embedded Linux init (give one of: %s)",
          workload, absl::StrJoin(kLinuxWorkloads, ", ")));
    }
    words.push_back(absl::StrCat("sigvisor_workload=", workload));
  }
  if (!ops.empty()) {
    uint64_t count;
    if (!absl::SimpleAtoi(ops, &count)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--ops '%s' is not a count (a whole number >= 0)", ops));
    }
    words.push_back(absl::StrCat("sigvisor_ops=", count));
  }
  absl::StatusOr<std::optional<uint64_t>> warmup_ops = ParseWarmup(warmup, workload);
  if (!warmup_ops.ok()) return warmup_ops.status();
  if (*warmup_ops) words.push_back(absl::StrCat("sigvisor_warmup=", **warmup_ops));
  if (!extra.empty()) words.push_back(extra);
  return absl::StrJoin(words, " ");
}

absl::StatusOr<std::vector<uint8_t>> LinuxInitrd(const std::string& path) {
  if (path.empty()) {
    const std::span<const uint8_t> embedded = EmbeddedLinuxInitramfs();
    return std::vector<uint8_t>(embedded.begin(), embedded.end());
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrFormat("--initrd: cannot open '%s': %s", path, std::strerror(errno)));
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  if (file.bad()) return absl::DataLossError(absl::StrFormat("--initrd: cannot read '%s'", path));
  if (bytes.size() > kMaxInitrdBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--initrd '%s' is %d MiB; at most %d MiB", path, bytes.size() >> 20,
        kMaxInitrdBytes >> 20));
  }
  return bytes;
}

}  // namespace sigvisor::cli
