// An SMP guest's own count of its reschedule IPIs (the bundled kernel's smp=on builds:
// its phase markers carry them, sigvisor_abi.h's struct sigvisor_ipi_counts). KVM's
// irq_injections counts an injection again when an exit cut it short; these are the
// IPIs the guest's rule sent, by and to each CPU, exactly.
#ifndef SIGVISOR_VMM_LEDGER_GUEST_IPIS_H_
#define SIGVISOR_VMM_LEDGER_GUEST_IPIS_H_

#include <cstdint>
#include <vector>

namespace sigvisor {

struct GuestIpis {
  uint64_t sent = 0;
  uint64_t received = 0;
  bool operator==(const GuestIpis&) const = default;
};

// Every CPU's, by CPU number; empty when the guest does not count them.
using GuestIpiCounts = std::vector<GuestIpis>;

// after - before per CPU (never below zero); empty unless both have the same CPUs.
inline GuestIpiCounts SubtractGuestIpis(const GuestIpiCounts& after, const GuestIpiCounts& before) {
  if (after.size() != before.size()) return {};
  GuestIpiCounts delta(after.size());
  for (size_t cpu = 0; cpu < after.size(); ++cpu) {
    delta[cpu].sent = after[cpu].sent >= before[cpu].sent ? after[cpu].sent - before[cpu].sent : 0;
    delta[cpu].received = after[cpu].received >= before[cpu].received
                              ? after[cpu].received - before[cpu].received
                              : 0;
  }
  return delta;
}

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_GUEST_IPIS_H_
