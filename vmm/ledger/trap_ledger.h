// The trap ledger: every guest instruction a trap mechanism intercepted, by kind
// ("dr_write", "dr_read", "segment_load", "msr_write") and by site, and the hardware
// debug-register loads the lazy DR7 shadow made for them. Under --trap=pv the guest
// counts its own writes (no exit each) and the VMM records them in batches, with the
// load hypercalls it served.
#ifndef SIGVISOR_VMM_LEDGER_TRAP_LEDGER_H_
#define SIGVISOR_VMM_LEDGER_TRAP_LEDGER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "vmm/ledger/exit_ledger.h"

namespace sigvisor {

// Counts by name (a kind, or a site's symbol+offset).
using TrapCounts = ExitCounts;

// The trap counters at one moment, or their change over a phase.
struct TrapTally {
  TrapCounts by_kind;
  TrapCounts by_site;     // symbol+offset -> count
  uint64_t dr_loads = 0;  // KVM_SET_DEBUGREGS (or equivalent) the traps caused
  uint64_t hypercalls = 0;  // --trap=pv: the guest's load requests (each one exit)

  uint64_t total() const { return Sum(by_kind); }
  bool operator==(const TrapTally&) const = default;
};

// after - before.
TrapTally Subtract(const TrapTally& after, const TrapTally& before);

struct TrapSiteCount {
  std::string site;  // symbol+offset
  std::string kind;
  uint64_t count = 0;
};

class TrapLedger {
 public:
  // `count` traps of `kind` at `address` (symbolized as `site`): 1 for a trapped
  // instruction, a paravirtual guest's count since the last batch for --trap=pv.
  // Copies `kind` and `site` only the first time it sees them (it runs inside a
  // trapped exit's timed interval).
  void Record(std::string_view kind, uint64_t address, std::string_view site, uint64_t count = 1);
  void AddDrLoads(uint64_t loads) { tally_.dr_loads += loads; }
  void AddHypercalls(uint64_t calls) { tally_.hypercalls += calls; }

  uint64_t total() const { return tally_.total(); }
  uint64_t dr_loads() const { return tally_.dr_loads; }
  uint64_t hypercalls() const { return tally_.hypercalls; }
  const TrapCounts& by_kind() const { return tally_.by_kind; }
  // By (site address, kind): a wrmsr site can count as segment_load or msr_write.
  const std::map<std::pair<uint64_t, std::string>, TrapSiteCount>& by_site() const {
    return by_site_;
  }
  const TrapTally& tally() const { return tally_; }

 private:
  TrapTally tally_;
  std::map<std::pair<uint64_t, std::string>, TrapSiteCount> by_site_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_TRAP_LEDGER_H_
