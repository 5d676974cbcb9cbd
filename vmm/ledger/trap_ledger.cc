#include "vmm/ledger/trap_ledger.h"

#include "vmm/ledger/phase_tracker.h"

namespace sigvisor {

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
  tally_.by_kind[std::string(kind)] += count;
  tally_.by_site[std::string(site)] += count;
  TrapSiteCount& row = by_site_[{address, std::string(kind)}];
  if (row.count == 0) {
    row.site = std::string(site);
    row.kind = std::string(kind);
  }
  row.count += count;
}

}  // namespace sigvisor
