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

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_GUEST_IPIS_H_
