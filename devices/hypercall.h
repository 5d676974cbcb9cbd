// The PC's hypercall port block: the guest writes the guest-physical address of an
// argument block to port SIGVISOR_HC_PORT_BASE + NR (guest-kit/abi/sigvisor_abi.h).
// A gate of the run's hypercall table (vmm/run/hypercall_table.h), where each
// number's owner serves it; NR is the port's offset in the block.
#ifndef SIGVISOR_DEVICES_HYPERCALL_H_
#define SIGVISOR_DEVICES_HYPERCALL_H_

#include <cstdint>

#include "vmm/run/hypercall_table.h"

namespace sigvisor {

class HypercallDevice : public HypercallGate {
 public:
  // Ports the block occupies: one per number the table has.
  static constexpr uint64_t kPortCount = HypercallTable::kMaxCalls;

  explicit HypercallDevice(const HypercallTable& calls) : HypercallGate(calls, 1) {}
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_HYPERCALL_H_
