#include "vmm/app/study/bloat.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_format.h"

namespace sigvisor::study {
namespace {

std::map<std::string, int64_t> Sizes(const SymbolTable& table) {
  std::map<std::string, int64_t> sizes;
  for (const Symbol& symbol : table.symbols()) {
    if (symbol.size == 0 || (symbol.type != STT_FUNC && symbol.type != STT_OBJECT)) continue;
    sizes[symbol.name] += static_cast<int64_t>(symbol.size);
  }
  return sizes;
}

}  // namespace

BloatReport CompareSymbols(const SymbolTable& old_symbols, const SymbolTable& new_symbols) {
  const std::map<std::string, int64_t> before = Sizes(old_symbols), after = Sizes(new_symbols);
  BloatReport report;
  std::map<std::string, BloatRow> rows;
  for (const auto& [name, size] : before) {
    rows[name] = {name, size, 0};
    report.old_total += size;
  }
  for (const auto& [name, size] : after) report.new_total += size;
  for (const auto& [name, size] : after) {
    rows.try_emplace(name, BloatRow{name, 0, 0}).first->second.new_bytes = size;
  }
  for (const auto& [name, row] : rows) {
    const int64_t delta = row.delta();
    if (delta == 0) continue;
    if (row.old_bytes == 0) ++report.added;
    else if (row.new_bytes == 0) ++report.removed;
    else if (delta > 0) ++report.grown;
    else ++report.shrunk;
    (delta > 0 ? report.up : report.down) += delta;
    report.rows.push_back(row);
  }
  std::stable_sort(report.rows.begin(), report.rows.end(), [](const BloatRow& a, const BloatRow& b) {
    return a.delta() > b.delta();
  });
  return report;
}

std::string FormatBloat(const BloatReport& report) {
  std::string out = absl::StrFormat(
      "add/remove: %d/%d grow/shrink: %d/%d up/down: %d/%d (%d)\n", report.added, report.removed,
      report.grown, report.shrunk, report.up, report.down, report.total());
  absl::StrAppendFormat(&out, "%-40s %7s %7s %7s\n", "function", "old", "new", "delta");
  for (const BloatRow& row : report.rows) {
    auto size = [](int64_t bytes) { return bytes ? absl::StrFormat("%d", bytes) : std::string("-"); };
    absl::StrAppendFormat(&out, "%-40s %7s %7s %+7d\n", row.name, size(row.old_bytes),
                          size(row.new_bytes), row.delta());
  }
  return out;
}

}  // namespace sigvisor::study
