// initramfs_pack: writes a newc cpio archive (cpio_newc.h) from entries named on the
// command line, deterministically, with no dependence on the `cpio` program. Used
// at build time for the Linux guest's embedded initramfs.
//
//   initramfs_pack OUTPUT ENTRY...
//     dir:NAME:MODE                   a directory (MODE in octal: 755)
//     char:NAME:MODE:MAJOR:MINOR      a character device node
//     file:NAME:MODE:SOURCE           a regular file with SOURCE's bytes
//
// Bad arguments or unreadable sources: one line on stderr, status 2.
#include <sys/stat.h>

#include <charconv>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "guest-kit/linux/cpio_newc.h"

namespace sigvisor {
namespace {

// `text` as a number in `base`, all of it; `what` names it in the error.
absl::StatusOr<uint32_t> Number(std::string_view text, int base, std::string_view what) {
  uint32_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value, base);
  if (text.empty() || error != std::errc() || stop != end) {
    return absl::InvalidArgumentError(absl::StrFormat("bad %s '%s'", what, text));
  }
  return value;
}

absl::StatusOr<CpioEntry> ParseEntry(std::string_view spec) {
  std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(spec.data(), spec.size()), absl::MaxSplits(':', 4));
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "bad entry '%s' (dir:NAME:MODE, char:NAME:MODE:MAJOR:MINOR or file:NAME:MODE:SOURCE)",
        spec));
  };
  if (parts.size() < 3) return bad();
  absl::StatusOr<uint32_t> permissions = Number(parts[2], 8, "mode");
  if (!permissions.ok()) return permissions.status();
  if (*permissions > 07777) return bad();
  CpioEntry entry{.name = std::string(parts[1])};
  if (parts[0] == "dir" && parts.size() == 3) {
    entry.mode = S_IFDIR | *permissions;
  } else if (parts[0] == "char" && parts.size() == 5) {
    entry.mode = S_IFCHR | *permissions;
    absl::StatusOr<uint32_t> major = Number(parts[3], 10, "major number");
    absl::StatusOr<uint32_t> minor = Number(parts[4], 10, "minor number");
    if (!major.ok()) return major.status();
    if (!minor.ok()) return minor.status();
    entry.rdev_major = *major;
    entry.rdev_minor = *minor;
  } else if (parts[0] == "file" && parts.size() == 4) {
    entry.mode = S_IFREG | *permissions;
    std::ifstream source{std::string(parts[3]), std::ios::binary};
    std::ostringstream bytes;
    if (!source || !(bytes << source.rdbuf())) {
      return absl::InvalidArgumentError(absl::StrFormat("cannot read '%s'", parts[3]));
    }
    entry.data = std::move(bytes).str();
  } else {
    return bad();
  }
  return entry;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: initramfs_pack OUTPUT ENTRY...\n";
    return 2;
  }
  std::vector<CpioEntry> entries;
  for (int i = 2; i < argc; ++i) {
    absl::StatusOr<CpioEntry> entry = ParseEntry(argv[i]);
    if (!entry.ok()) {
      std::cerr << "initramfs_pack: " << entry.status().message() << "\n";
      return 2;
    }
    entries.push_back(*std::move(entry));
  }
  absl::StatusOr<std::string> archive = WriteNewcArchive(std::move(entries));
  if (!archive.ok()) {
    std::cerr << "initramfs_pack: " << archive.status().message() << "\n";
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  if (!out.write(archive->data(), static_cast<std::streamsize>(archive->size())) || !out.flush()) {
    std::cerr << "initramfs_pack: cannot write '" << argv[1] << "'\n";
    return 2;
  }
  return 0;
}

}  // namespace
}  // namespace sigvisor

int main(int argc, char** argv) { return sigvisor::Main(argc, argv); }
