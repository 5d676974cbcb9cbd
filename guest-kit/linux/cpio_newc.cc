#include "guest-kit/linux/cpio_newc.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

constexpr std::string_view kMagic = "070701";
constexpr std::string_view kTrailer = "TRAILER!!!";
constexpr size_t kFieldCount = 13;  // after the magic, 8 hex digits each
constexpr size_t kHeaderBytes = kMagic.size() + kFieldCount * 8;

// The header's fields, in their order in the format.
enum Field {
  kIno, kMode, kUid, kGid, kNlink, kMtime, kFileSize,
  kDevMajor, kDevMinor, kRdevMajor, kRdevMinor, kNameSize, kCheck,
};

size_t PadTo4(size_t n) { return (n + 3) & ~size_t{3}; }

void Append(std::string& out, uint32_t ino, const CpioEntry& entry) {
  uint32_t fields[kFieldCount] = {};
  fields[kIno] = ino;
  fields[kMode] = entry.mode;
  fields[kNlink] = S_ISDIR(entry.mode) ? 2 : 1;
  fields[kFileSize] = static_cast<uint32_t>(entry.data.size());
  fields[kRdevMajor] = entry.rdev_major;
  fields[kRdevMinor] = entry.rdev_minor;
  fields[kNameSize] = static_cast<uint32_t>(entry.name.size() + 1);  // with its NUL
  out += kMagic;
  for (uint32_t field : fields) out += absl::StrFormat("%08X", field);
  out += entry.name;
  out += '\0';
  out.resize(PadTo4(out.size()), '\0');
  out += entry.data;
  out.resize(PadTo4(out.size()), '\0');
}

absl::Status Malformed(size_t offset, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrFormat("not a newc cpio archive: at byte %d: %s", offset, why));
}

}  // namespace

absl::StatusOr<std::string> WriteNewcArchive(std::vector<CpioEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const CpioEntry& a, const CpioEntry& b) { return a.name < b.name; });
  for (size_t i = 0; i < entries.size(); ++i) {
    const CpioEntry& entry = entries[i];
    if (entry.name.empty() || entry.name[0] == '/' || entry.name == kTrailer ||
        entry.name.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrFormat("cpio entry name '%s'", entry.name));
    }
    if (i > 0 && entries[i - 1].name == entry.name) {
      return absl::InvalidArgumentError(absl::StrFormat("cpio entry '%s' twice", entry.name));
    }
    if (!entry.data.empty() && !S_ISREG(entry.mode)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("cpio entry '%s' has data but is not a regular file", entry.name));
    }
  }
  std::string out;
  uint32_t ino = 1;
  for (const CpioEntry& entry : entries) Append(out, ino++, entry);
  Append(out, 0, CpioEntry{.name = std::string(kTrailer)});
  return out;
}

absl::StatusOr<std::vector<CpioEntry>> ParseNewcArchive(std::string_view archive) {
  std::vector<CpioEntry> entries;
  size_t at = 0;
  while (true) {
    if (archive.size() - at < kHeaderBytes) return Malformed(at, "truncated header");
    if (archive.substr(at, kMagic.size()) != kMagic) return Malformed(at, "bad magic");
    uint32_t fields[kFieldCount];
    for (size_t i = 0; i < kFieldCount; ++i) {
      const std::string_view hex = archive.substr(at + kMagic.size() + i * 8, 8);
      uint32_t value = 0;
      for (char c : hex) {
        int digit;
        if (c >= '0' && c <= '9') digit = c - '0';
        else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        else return Malformed(at, "a header field is not hexadecimal");
        value = value << 4 | static_cast<uint32_t>(digit);
      }
      fields[i] = value;
    }
    const size_t name_at = at + kHeaderBytes;
    const size_t name_size = fields[kNameSize];
    if (name_size == 0 || archive.size() - name_at < name_size) {
      return Malformed(at, "name runs past the end");
    }
    if (archive[name_at + name_size - 1] != '\0') return Malformed(at, "name not terminated");
    const std::string_view name = archive.substr(name_at, name_size - 1);
    const size_t data_at = PadTo4(name_at + name_size);
    const size_t data_size = fields[kFileSize];
    if (data_at > archive.size() || archive.size() - data_at < data_size) {
      return Malformed(at, "data runs past the end");
    }
    if (name == kTrailer) return entries;
    entries.push_back(CpioEntry{.name = std::string(name),
                                .mode = fields[kMode],
                                .data = std::string(archive.substr(data_at, data_size)),
                                .rdev_major = fields[kRdevMajor],
                                .rdev_minor = fields[kRdevMinor]});
    at = std::min(archive.size(), PadTo4(data_at + data_size));
  }
}

}  // namespace sigvisor
