// The hypercall port: the paravirtual ABI of guest-kit/abi/sigvisor_abi.h.
//
// The guest writes the guest-physical address of an argument block to port
// SIGVISOR_HC_PORT_BASE + NR. This device reads the block through GuestMemory
// (bounds-checked: the guest controls every field), validates it, and hands a
// plain C++ event to its handler. Guest-controlled strings are copied, capped and
// never trusted to be terminated.
#ifndef SIGVISOR_DEVICES_HYPERCALL_H_
#define SIGVISOR_DEVICES_HYPERCALL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vmm/machine/device.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor {

// What the guest asked for, already validated.
class HypercallHandler {
 public:
  virtual ~HypercallHandler() = default;
  virtual void OnConsoleWrite(std::string_view text) = 0;
  virtual void OnExit(int64_t status) = 0;
  // `calibration`: an empty phase measuring the markers' own cost (ABI
  // SIGVISOR_PHASE_CALIBRATION). `op_syscall`: the system call each operation makes
  // once, when the guest names one (fault injection counts operations by it).
  virtual void OnPhaseBegin(std::string name, uint64_t ops, uint64_t guest_tsc,
                            bool calibration, std::optional<uint64_t> op_syscall) = 0;
  virtual void OnPhaseEnd(uint64_t guest_tsc) = 0;
  virtual void OnTimeReport(std::string name, uint64_t tsc_cycles, uint64_t count) = 0;
  virtual void OnPanic(std::string message, uint64_t rip, uint64_t vector) = 0;
};

class HypercallDevice : public Device {
 public:
  // Hypercall NR is a 4-byte access at port base + NR, which spans ports NR..NR+3:
  // 16 ports leave room for every SIGVISOR_HC_* number and the next few.
  static constexpr uint64_t kPortCount = 16;

  HypercallDevice(GuestMemory& memory, HypercallHandler& handler)
      : memory_(memory), handler_(handler) {}

  std::string_view name() const override { return "hypercall"; }
  std::string AccessName(uint64_t offset) const override {
    return "hypercall " + std::string(CallName(offset));
  }

  // Reads are not part of the ABI: they return all-ones, as an absent device would.
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  // A 4-byte write of an argument block's address makes hypercall `offset`.
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

  // Name of hypercall `nr` for reports ("console_write"), "unknown" otherwise.
  static std::string_view CallName(uint64_t nr);

 private:
  GuestMemory& memory_;
  HypercallHandler& handler_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_HYPERCALL_H_
