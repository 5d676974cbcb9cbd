// The backend seam: what the run loop needs from whatever executes the guest (KVM
// on x86-64 today; a fake in tests; an interpreter later).
#ifndef SIGVISOR_VMM_RUN_BACKEND_H_
#define SIGVISOR_VMM_RUN_BACKEND_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "vmm/base/stats_snapshot.h"
#include "vmm/run/vm_exit.h"

namespace sigvisor {

// Where the guest CPU is, for diagnoses and reports.
struct CpuLocation {
  uint64_t pc = 0;  // the program counter
  int cpl = 0;      // the privilege level: 0 the kernel's, 3 the user's
  uint64_t page_table_root = 0;
  bool paging = true;     // translation is on: pc is a virtual address
  std::string registers;  // one line of the general registers
  // The vCPU is in its power-on state: the host reset it (AMD SVM's KVM does so at a
  // shutdown), and where the guest was before is lost.
  bool reset_by_host = false;
  // The exit being handled was port I/O: what it accessed, so that a diagnosis can
  // find the instruction that did it. KVM may have moved pc past it already (it does
  // for an `out` it emulated, as PVM does at CPL0) or not (its fast path on hardware).
  struct PortIo {
    uint16_t port = 0;
    uint8_t size = 0;  // bytes per access: 1, 2 or 4
    bool out = false;
    // The register an instruction can take its port from held `port` at the exit, so
    // such an instruction may have made the access (the backend reads the register).
    bool port_in_register = false;
  };
  std::optional<PortIo> port_io;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Runs the guest until its next exit.
  virtual absl::StatusOr<VmExit> Run() = 0;

  // Makes a running or about-to-run Run() return kInterrupted soon. Safe to call
  // from another thread (the watchdog's).
  virtual void Kick() = 0;

  // The host's own counters for this vCPU (KVM's binary stats); empty if none.
  virtual absl::StatusOr<StatsSnapshot> ReadStats() = 0;

  virtual absl::StatusOr<CpuLocation> Locate() = 0;

  // What the CPU holds of interrupts, in one line, for a timeout's diagnosis (x86:
  // halted or not, RFLAGS.IF, the local APIC's pending and in-service vectors); empty
  // where the backend cannot say. Asked only at a timeout, not by every Locate().
  virtual std::string DescribeInterrupts() { return {}; }
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_BACKEND_H_
