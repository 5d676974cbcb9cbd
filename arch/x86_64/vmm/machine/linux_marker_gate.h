// The Linux marker port (guest-kit/abi/sigvisor_abi.h, "The Linux marker protocol")
// on the x86 bus: a 4-byte `outl` whose arguments are the vCPU's general registers,
// read at the exit, handed to vmm/run/linux_marker.h as plain values and decoded there
// into what the phase and exit hypercalls answer. The run loop applies it as it
// applies a hypercall. The ORDERS marker, init's quiescent point, is answered here:
// the VMM writes the run's orders into init's buffer (docs/snapshots.md).
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_MARKER_GATE_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_MARKER_GATE_H_

#include <linux/kvm.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "arch/x86_64/vmm/cpu/vcpu_state.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor::x86 {

// One write to the marker port: `data`, the bytes the exit carries (eax's), and
// `regs`, the writer's registers at the exit. Fails the run as a bad device access
// when the write breaks the protocol or eax is not what was written (the registers
// are then another moment's or another vCPU's).
HypercallResult DecodeLinuxMarkerWrite(std::span<const uint8_t> data, const kvm_regs& regs);

// Where init waits for its orders (SIGVISOR_LINUX_MARKER_ORDERS): its buffer, a user
// virtual address and size, under the page tables it asked with; and whether init
// holds its own FPU state across the wait (SIGVISOR_LINUX_ORDERS_FPU_HELD), which a
// snapshot then need not save.
struct LinuxOrdersRequest {
  uint64_t buffer_gva = 0;
  uint64_t buffer_len = 0;
  uint64_t cr3 = 0;
  bool fpu_held = false;
};

// Writes `orders` and a NUL into the request's buffer, checked as the guest kernel's
// write to user memory would be (present, user, writable at every level, in RAM).
// Refused (nothing written): orders of SIGVISOR_LINUX_ORDERS_MAX bytes or more, or that
// do not fit the buffer with their NUL.
absl::Status AnswerLinuxOrders(GuestMemory& memory, const LinuxOrdersRequest& request,
                               std::string_view orders);

class LinuxMarkerGate : public CallGate {
 public:
  // The ports it occupies (SIGVISOR_LINUX_MARKER_PORT on).
  static constexpr uint64_t kPortCount = 4;

  // What the ORDERS marker does before the orders are written: kContinue writes them;
  // any other verdict ends the run there, the request unanswered (`sigvisor snapshot`
  // saves the VM then).
  using QuiescentHook = std::function<HypercallResult()>;

  // `cpu` (vCPU 0, where the marker exits arrive) must outlive the gate. `orders`:
  // what init is told when it asks (the run's command-line words).
  explicit LinuxMarkerGate(VcpuState& cpu, std::string orders = "", QuiescentHook hook = {})
      : cpu_(cpu), orders_(std::move(orders)), hook_(std::move(hook)) {}

  std::string_view name() const override { return "linux_marker"; }

  HypercallResult Access(uint64_t offset, bool is_write, std::span<uint8_t> data) const override;

  // init's orders request, once it made one (the quiescent point's).
  const std::optional<LinuxOrdersRequest>& orders_request() const { return request_; }
  const std::string& orders() const { return orders_; }

 private:
  HypercallResult Orders(const kvm_regs& regs) const;

  VcpuState& cpu_;
  std::string orders_;
  QuiescentHook hook_;
  mutable std::optional<LinuxOrdersRequest> request_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_MARKER_GATE_H_
