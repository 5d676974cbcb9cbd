// The exit ledger: every VM exit, by reason ("io", "mmio", "hlt", ...) and by detail
// ("port 0x501 write (hypercall console_write)"), with the VMM's handling latency.
#ifndef SIGVISOR_VMM_LEDGER_EXIT_LEDGER_H_
#define SIGVISOR_VMM_LEDGER_EXIT_LEDGER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "vmm/ledger/latency.h"

namespace sigvisor {

// Exit counts by reason: what a phase boundary remembers.
using ExitCounts = std::map<std::string, uint64_t>;

class ExitLedger {
 public:
  // One exit: `handle_ns` is the time from KVM_RUN returning to the VMM being ready
  // to re-enter the guest (the VMM's share of the exit's cost).
  void Record(std::string_view reason, std::string_view detail, uint64_t handle_ns);

  // Adds another ledger's exits (another vCPU's: a multi-vCPU run reports one ledger).
  void Merge(const ExitLedger& other);

  uint64_t total() const { return total_; }
  const std::map<std::string, LatencyStats>& by_reason() const { return by_reason_; }
  const std::map<std::pair<std::string, std::string>, LatencyStats>& by_detail() const {
    return by_detail_;
  }
  ExitCounts Counts() const;

 private:
  uint64_t total_ = 0;
  std::map<std::string, LatencyStats> by_reason_;
  std::map<std::pair<std::string, std::string>, LatencyStats> by_detail_;
};

// after - before, per reason (reasons absent from `before` count from 0).
ExitCounts Subtract(const ExitCounts& after, const ExitCounts& before);
uint64_t Sum(const ExitCounts& counts);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_EXIT_LEDGER_H_
