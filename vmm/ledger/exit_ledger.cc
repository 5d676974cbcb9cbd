#include "vmm/ledger/exit_ledger.h"

namespace sigvisor {

void ExitLedger::Record(std::string_view reason, std::string_view detail, uint64_t handle_ns) {
  ++total_;
  by_reason_[std::string(reason)].Add(handle_ns);
  by_detail_[{std::string(reason), std::string(detail)}].Add(handle_ns);
}

void ExitLedger::Merge(const ExitLedger& other) {
  total_ += other.total_;
  for (const auto& [reason, stats] : other.by_reason_) by_reason_[reason].Merge(stats);
  for (const auto& [key, stats] : other.by_detail_) by_detail_[key].Merge(stats);
}

ExitCounts ExitLedger::Counts() const {
  ExitCounts counts;
  for (const auto& [reason, stats] : by_reason_) counts[reason] = stats.count;
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
