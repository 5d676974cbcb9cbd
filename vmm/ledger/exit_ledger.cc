#include "vmm/ledger/exit_ledger.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace sigvisor {

std::string ExitDetail(const ExitKey& key, std::string_view access_name, std::string_view text) {
  switch (key.detail) {
    case ExitKey::Detail::kNone: return "";
    case ExitKey::Detail::kText: return std::string(text);
    case ExitKey::Detail::kSuberror: return absl::StrFormat("suberror %d", key.value);
    case ExitKey::Detail::kAccess:
      if (key.kind == ExitKind::kIo) {
        return absl::StrFormat("port %#x %s (%s)", key.value, key.is_write ? "out" : "in",
                               access_name);
      }
      return absl::StrFormat("%s %#x %s (%s)", key.kind == ExitKind::kMsr ? "msr" : "mmio",
                             key.value, key.is_write ? "write" : "read", access_name);
  }
  return "";
}

ExitLedger::Row& ExitLedger::RowOf(const ExitKey& key) {
  if (last_ < rows_.size() && rows_[last_].key == key) return rows_[last_];
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].key == key) {
      last_ = i;
      return rows_[i];
    }
  }
  last_ = rows_.size();
  rows_.push_back(Row{key, {}, {}});
  return rows_.back();
}

void ExitLedger::Record(const ExitKey& key, uint64_t handle_ns) {
  ++total_;
  RowOf(key).stats.Add(handle_ns);
}

void ExitLedger::Record(ExitKind kind, std::string_view text, uint64_t handle_ns) {
  ExitKey key{.kind = kind};
  if (!text.empty()) {
    auto it = std::find(texts_.begin(), texts_.end(), text);
    key.detail = ExitKey::Detail::kText;
    key.value = static_cast<uint64_t>(it - texts_.begin());
    if (it == texts_.end()) texts_.emplace_back(text);
  }
  Record(key, handle_ns);
}

void ExitLedger::NameAccesses(absl::FunctionRef<std::string(const ExitKey&)> name) {
  for (Row& row : rows_) {
    if (row.key.detail == ExitKey::Detail::kAccess && row.access_name.empty()) {
      row.access_name = name(row.key);
    }
  }
}

void ExitLedger::Merge(const ExitLedger& other) {
  total_ += other.total_;
  for (const Row& theirs : other.rows_) {
    ExitKey key = theirs.key;
    if (key.detail == ExitKey::Detail::kText) {  // their text's index in our texts
      const std::string& text = other.texts_[key.value];
      auto it = std::find(texts_.begin(), texts_.end(), text);
      key.value = static_cast<uint64_t>(it - texts_.begin());
      if (it == texts_.end()) texts_.push_back(text);
    }
    Row& ours = RowOf(key);
    ours.stats.Merge(theirs.stats);
    if (ours.access_name.empty()) ours.access_name = theirs.access_name;
  }
}

std::map<std::string, LatencyStats> ExitLedger::by_reason() const {
  std::map<std::string, LatencyStats> reasons;
  for (const Row& row : rows_) reasons[std::string(ExitKindName(row.key.kind))].Merge(row.stats);
  return reasons;
}

std::map<std::pair<std::string, std::string>, LatencyStats> ExitLedger::by_detail() const {
  std::map<std::pair<std::string, std::string>, LatencyStats> details;
  for (const Row& row : rows_) {
    const std::string_view text =
        row.key.detail == ExitKey::Detail::kText ? std::string_view(texts_[row.key.value]) : "";
    details[{std::string(ExitKindName(row.key.kind)), ExitDetail(row.key, row.access_name, text)}]
        .Merge(row.stats);
  }
  return details;
}

ExitCounts ExitLedger::Counts() const {
  ExitCounts counts;
  for (const Row& row : rows_) counts[std::string(ExitKindName(row.key.kind))] += row.stats.count;
  return counts;
}

ExitCounts Subtract(const ExitCounts& after, const ExitCounts& before) {
  ExitCounts delta;
  for (const auto& [reason, count] : after) {
    auto it = before.find(reason);
    uint64_t base = it == before.end() ? 0 : it->second;
    if (count > base) delta[reason] = count - base;
  }
  return delta;
}

uint64_t Sum(const ExitCounts& counts) {
  uint64_t total = 0;
  for (const auto& [reason, count] : counts) total += count;
  return total;
}

}  // namespace sigvisor
