// A VM exit as a typed value (cloud-hypervisor's `Vcpu::run() -> VmExit`): the run
// loop sees this, never kvm_run, so a fake backend or an interpreter can stand in.
#ifndef SIGVISOR_VMM_RUN_VM_EXIT_H_
#define SIGVISOR_VMM_RUN_VM_EXIT_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace sigvisor {

enum class ExitKind {
  kIo,             // port I/O
  kMmio,           // access to guest-physical memory with no RAM behind it
  kHalt,           // hlt with no in-kernel irqchip
  kMsr,            // rdmsr/wrmsr of an MSR KVM hands to the VMM (its local APIC's x2APIC MSRs)
  kShutdown,       // triple fault
  kInternalError,  // KVM could not emulate an instruction
  kFailEntry,      // the hardware refused the guest state
  kDebug,          // KVM_EXIT_DEBUG
  kInterrupted,    // KVM_RUN interrupted (the watchdog's kick)
  kSystemEvent,    // guest-requested reset / shutdown through KVM
  kIrqWindowOpen,  // the guest can take an interrupt now (asked for by the VMM)
  kUnknown,
};

std::string_view ExitKindName(ExitKind kind);

struct VmExit {
  ExitKind kind = ExitKind::kUnknown;
  // kIo / kMmio / kMsr: the access. `data` points into the backend's buffer: a read's
  // result is written there before the next Run().
  bool is_write = false;
  uint64_t address = 0;  // port, guest-physical address or MSR index
  uint32_t size = 0;     // bytes per access
  uint32_t count = 1;    // string I/O repeats (rep outsb): data holds size*count bytes
  std::span<uint8_t> data;
  // The backend's raw reason and sub-code (KVM exit reason, internal-error suberror,
  // hardware entry failure reason) for diagnosis.
  uint32_t raw_reason = 0;
  uint64_t raw_detail = 0;
  // kHalt: the backend wakes the vCPU itself (a local APIC in the VMM: the next Run()
  // waits for an interrupt and injects it), so the halt is idle time, not the end.
  bool halt_waits_for_interrupt = false;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_RUN_VM_EXIT_H_
