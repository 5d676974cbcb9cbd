#include "vmm/loader/system_map.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "vmm/base/capped_file.h"

namespace sigvisor {
namespace {

// A whole field of hex digits (no "0x", as nm prints addresses).
bool ParseHex(std::string_view field, uint64_t* value) {
  if (field.empty() || field.size() > 16) return false;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), *value, 16);
  return error == std::errc() && end == field.data() + field.size();
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The blank-separated fields of one line.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && IsBlank(line[at])) ++at;
    size_t end = at;
    while (end < line.size() && !IsBlank(line[end])) ++end;
    if (end > at) fields.push_back(line.substr(at, end - at));
    at = end;
  }
  return fields;
}

}  // namespace

absl::StatusOr<SymbolTable> ParseSystemMap(std::string_view text) {
  std::vector<Symbol> text_symbols;
  std::vector<uint64_t> addresses;  // every line's, to end each text symbol at the next
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_number;
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    if (line.find("real System.map is in") != std::string_view::npos) {
      return absl::InvalidArgumentError(
          "it is Debian's placeholder: the real System.map is in the kernel's -dbg package "
          "(linux-image-VERSION-dbg, /usr/lib/debug/boot/System.map-VERSION)");
    }
    uint64_t addr = 0;
    if (fields.size() != 3 || fields[1].size() != 1 ||
        !absl::ascii_isalpha(static_cast<unsigned char>(fields[1][0])) ||
        !ParseHex(fields[0], &addr)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "line %d is not 'ADDRESS TYPE NAME' (as `nm -n vmlinux` prints): '%s'", line_number,
          std::string(line.substr(0, 80))));
    }
    addresses.push_back(addr);
    const char type = fields[1][0];
    if (!IsNmTextType(type)) continue;
    text_symbols.push_back({.name = std::string(fields[2]),
                            .addr = addr,
                            .size = 0,
                            .type = STT_FUNC,
                            .binding = NmTypeBinding(type)});
  }
  if (text_symbols.empty()) {
    return absl::InvalidArgumentError(
        "it names no code (no symbol of type t, T, w or W): not a kernel's System.map, or "
        "Debian's placeholder (the real one is in the kernel's -dbg package)");
  }
  return SymbolTable::FromTextReachingNext(std::move(text_symbols), std::move(addresses));
}

absl::StatusOr<SymbolTable> ReadSystemMap(const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadCappedFile(path, file_caps::kSystemMap,
                     {.noun = "the System.map", .cannot_open = "cannot read"});
  if (!text.ok()) return text.status();
  absl::StatusOr<SymbolTable> table = ParseSystemMap(*text);
  if (!table.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is not a usable System.map: %s", path, table.status().message()));
  }
  return table;
}

}  // namespace sigvisor
