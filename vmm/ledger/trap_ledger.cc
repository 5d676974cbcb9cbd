#include "vmm/ledger/trap_ledger.h"

#include "vmm/ledger/phase_tracker.h"

namespace sigvisor {

namespace {

// counts[name] += count, making the key string only for a name not yet counted.
void AddCount(TrapCounts& counts, std::string_view name, uint64_t count) {
  if (auto it = counts.find(name); it != counts.end()) {
    it->second += count;
  } else {
    counts.emplace(std::string(name), count);
  }
}

}  // namespace

TrapTally Subtract(const TrapTally& after, const TrapTally& before) {
  TrapTally delta;
  delta.by_kind = Subtract(after.by_kind, before.by_kind);
  delta.by_site = Subtract(after.by_site, before.by_site);
  delta.dr_loads = SaturatingSubtract(after.dr_loads, before.dr_loads);
  delta.hypercalls = SaturatingSubtract(after.hypercalls, before.hypercalls);
  return delta;
}

void TrapLedger::Record(std::string_view kind, uint64_t address, std::string_view site,
                        uint64_t count) {
  if (count == 0) return;
  AddCount(tally_.by_kind, kind, count);
  AddCount(tally_.by_site, site, count);
  // The kind is one of four short names: its key string stays in the small-string
  // buffer, no allocation to look the row up.
  TrapSiteCount& row = by_site_[{address, std::string(kind)}];
  if (row.count == 0) {
    row.site = std::string(site);
    row.kind = std::string(kind);
  }
  row.count += count;
}

}  // namespace sigvisor
