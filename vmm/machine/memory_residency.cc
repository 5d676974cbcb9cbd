#include "vmm/machine/memory_residency.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

#include "absl/strings/str_format.h"
#include "vmm/base/capped_file.h"

namespace sigvisor {
namespace {

// The digits at the start of `text` in `base` (no sign, no prefix), or none.
std::optional<uint64_t> Number(std::string_view text, int base) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// "7f12a0000000-7f12aa000000 rw-p ..." starts a mapping's entry: its start address.
std::optional<uint64_t> EntryStart(std::string_view line) {
  const size_t dash = line.find('-');
  if (dash == std::string_view::npos || dash == 0) return std::nullopt;
  const std::string_view hex = line.substr(0, dash);
  if (hex.find_first_not_of("0123456789abcdef") != std::string_view::npos) return std::nullopt;
  return Number(hex, 16);
}

// "Rss:   1234 kB" as bytes, when `line` is the field `name`.
std::optional<uint64_t> FieldBytes(std::string_view line, std::string_view name) {
  if (!line.starts_with(name) || line.substr(name.size(), 1) != ":") return std::nullopt;
  line.remove_prefix(name.size() + 1);
  const size_t digits = line.find_first_not_of(' ');
  if (digits == std::string_view::npos || !line.ends_with(" kB")) return std::nullopt;
  const std::optional<uint64_t> kib = Number(line.substr(digits), 10);
  if (!kib) return std::nullopt;
  return *kib * 1024;
}

}  // namespace

absl::StatusOr<MemoryResidency> ParseSmapsResidency(std::string_view smaps, uint64_t base) {
  bool inside = false;
  std::optional<uint64_t> size, rss, anonymous;
  while (!smaps.empty()) {
    const size_t end = smaps.find('\n');
    const std::string_view line = smaps.substr(0, end);
    smaps.remove_prefix(end == std::string_view::npos ? smaps.size() : end + 1);
    if (std::optional<uint64_t> start = EntryStart(line)) {
      if (inside) break;  // the next mapping's entry
      inside = *start == base;
      continue;
    }
    if (!inside) continue;
    if (!size) size = FieldBytes(line, "Size");
    if (!rss) rss = FieldBytes(line, "Rss");
    if (!anonymous) anonymous = FieldBytes(line, "Anonymous");
  }
  if (!inside) {
    return absl::NotFoundError(absl::StrFormat("no mapping starts at %#x in smaps", base));
  }
  if (!size || !rss || !anonymous || *anonymous > *rss) {
    return absl::DataLossError(absl::StrFormat(
        "the smaps entry of the mapping at %#x lacks Size, Rss or Anonymous, or says more is "
        "anonymous than resident",
        base));
  }
  return MemoryResidency{
      .mapped_bytes = *size, .resident_bytes = *rss, .private_bytes = *anonymous};
}

absl::StatusOr<MemoryResidency> ReadMemoryResidency(const void* base) {
  absl::StatusOr<std::string> smaps =
      ReadCappedFile("/proc/self/smaps", file_caps::kProcSmaps, {.noun = "smaps"});
  if (!smaps.ok()) return smaps.status();
  return ParseSmapsResidency(*smaps, reinterpret_cast<uint64_t>(base));
}

}  // namespace sigvisor
