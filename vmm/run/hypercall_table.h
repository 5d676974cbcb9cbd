// The guest's hypercalls (guest-kit/abi/sigvisor_abi.h): one table from number to
// handler (Solo5's hvt_core_register_hypercall). Whoever owns a hypercall registers
// for its number: the guest protocol (guest_protocol.h) for console, exit, phases,
// time reports and panics; the fault injector for the injection events. Nobody
// else decodes the ABI or looks at the ports.
//
// A HypercallGate is where the calls arrive on the bus: the PC's port block, where
// NR is the port's offset (devices/hypercall.h), or the Malta MMIO window, where it
// is the word's (devices/malta/hypercall_mmio.h). The run loop hands an access that routes
// to its gate to the gate itself (device_exit.h), so a handler's answer reaches the
// loop whole: the loop is nobody's callback.
#ifndef SIGVISOR_VMM_RUN_HYPERCALL_TABLE_H_
#define SIGVISOR_VMM_RUN_HYPERCALL_TABLE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/device.h"
#include "vmm/run/outcome.h"
#include "vmm/run/phase_marker.h"

namespace sigvisor {

// What a hypercall's handler answers. kGuestEnded: the guest ended the run with
// `outcome` (kExited or kPanicked); kRunFailed: the call cannot be served and the run
// fails with `outcome` (kBadDeviceAccess: a malformed call).
struct HypercallResult {
  RunVerdict verdict = RunVerdict::kContinue;
  // kContinue: the exit was an instrument's (the injector's reports), not the
  // guest's own work: kept out of the exit ledger and of exit counts.
  bool instrument = false;
  Outcome outcome = Outcome::kExited;  // kGuestEnded, kRunFailed
  int exit_code = 0;                   // kGuestEnded
  std::string diagnosis;               // kGuestEnded (a panic), kRunFailed: one line
  std::optional<uint64_t> guest_pc;    // kGuestEnded: where the guest says it failed, if it did
  std::optional<PhaseMarker> marker;   // kContinue: a phase boundary the guest set
  uint64_t guest_tsc = 0;              // with `marker`: the guest's TSC at it
  std::string warning;                 // kContinue: one for the run's report

  static HypercallResult RunFailed(Outcome outcome, std::string diagnosis) {
    HypercallResult failed;
    failed.verdict = RunVerdict::kRunFailed;
    failed.outcome = outcome;
    failed.diagnosis = std::move(diagnosis);
    return failed;
  }
};

// The ABI's name of hypercall `nr` ("console_write"), "unknown" otherwise.
std::string_view HypercallName(uint64_t nr);

// Whether the ABI lets any CPU of an SMP guest make hypercall `nr` (console_write,
// exit, panic, send_ipi); every other call is vCPU 0's alone.
bool AnyVcpuMayMake(uint64_t nr);

class HypercallTable {
 public:
  // Numbers 0 .. kMaxCalls-1: the PC port block's ports (SIGVISOR_HC_PORTS; hypercall
  // NR is a 4-byte access at base + NR, which spans ports NR..NR+3).
  static constexpr uint64_t kMaxCalls = SIGVISOR_HC_PORTS;

  using Handler = std::function<HypercallResult(uint32_t args_gpa)>;

  // One owner per number: AlreadyExists if `nr` is taken, InvalidArgument past the table.
  absl::Status Register(uint64_t nr, Handler handler);
  bool registered(uint64_t nr) const { return nr < kMaxCalls && handlers_[nr] != nullptr; }

  // Hypercall `nr` with its 4-byte argument (the argument block's guest-physical
  // address). A malformed call (wrong width, unknown number) fails as a bad device
  // access, naming the call.
  // On a machine of several vCPUs, a call from a vCPU other than 0 (caller()) is made
  // only when AnyVcpuMayMake(nr); any other fails the run as a bad device access,
  // "hypercall NAME from vCPU N: only vCPU 0 makes it".
  HypercallResult Call(uint64_t nr, std::span<const uint8_t> argument) const;

  // A machine of several vCPUs: `caller` says which vCPU makes the call being served
  // (a gate runs on its caller's thread: the function looks at the calling thread).
  // Set before the vCPUs run. Unset: every call is vCPU 0's.
  void set_caller(std::function<int()> caller) { caller_ = std::move(caller); }
  // The vCPU making the call being served (a handler's question): 0 without a caller.
  int caller() const { return caller_ ? caller_() : 0; }

 private:
  std::array<Handler, kMaxCalls> handlers_;
  std::function<int()> caller_;
};

// Where the guest's calls arrive on the bus: a device whose accesses answer what a
// hypercall answers (a phase marker, the run's end), which the run loop applies in its
// order (device_exit.h). HypercallGate takes them through the hypercall table by
// number; a Linux guest's marker port decodes registers instead
// (arch/x86_64/vmm/machine/linux_marker_gate.h).
class CallGate : public Device {
 public:
  // One access. Reads that are not part of the gate's protocol return all-ones, as an
  // absent device would.
  virtual HypercallResult Access(uint64_t offset, bool is_write, std::span<uint8_t> data) const = 0;

  // For whoever routes through the bus without the run loop (its fuzzer): the
  // access's answer as a device's. A call that ends or fails the run stops it.
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;
};

// The bus device where hypercalls arrive: hypercall NR at offset `stride` * NR.
class HypercallGate : public CallGate {
 public:
  // `table` must outlive the gate.
  HypercallGate(const HypercallTable& table, uint64_t stride) : table_(table), stride_(stride) {}

  std::string_view name() const override { return "hypercall"; }
  std::string AccessName(uint64_t offset) const override {
    return "hypercall " + std::string(HypercallName(offset / stride_));
  }

  // A store of an argument block's address makes the call.
  HypercallResult Access(uint64_t offset, bool is_write, std::span<uint8_t> data) const override;

 private:
  HypercallResult Store(uint64_t offset, std::span<const uint8_t> data) const;

  const HypercallTable& table_;
  uint64_t stride_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_HYPERCALL_TABLE_H_
