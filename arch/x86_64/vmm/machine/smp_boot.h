// The SMP hypercalls of a sigvisor kernel built with smp=on (guest-kit/abi/
// sigvisor_abi.h, "SMP"): SIGVISOR_HC_CPU_UP starts an application processor in the
// calling vCPU's state, SIGVISOR_HC_SEND_IPI sends an IPI to every vCPU its mask names
// (KVM's PV send-IPI is the model), each as a KVM_SIGNAL_MSI.
//
// Every field is the guest's: a CPU number past the machine, a vCPU started twice, an
// empty mask, a bit past the machine's CPUs, a vector below SIGVISOR_IPI_VECTOR_MIN or
// above 255, a reserved word that is not 0, CPU_UP from another vCPU than 0: each is
// the guest's error, and ends the run as a bad device access with one line naming the
// vCPU that made the call and what was wrong; never the VMM's crash.
//
// The calls run on their caller's thread (a gate is served there): CPU_UP on vCPU 0's,
// where its registers are read; SEND_IPI on any vCPU's. The bus serializes them (it is
// shared once the machine has APs), and the IPI counts are atomic, for a reader on
// another thread.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_SMP_BOOT_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_SMP_BOOT_H_

#include <linux/kvm.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/machine/long_mode.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor::x86 {

// What the SMP hypercalls do to the machine: KVM's (x86_machine.cc), or a test's.
class SmpMachine {
 public:
  virtual ~SmpMachine() = default;
  // The vCPU whose thread makes the call being served.
  virtual int CallingVcpu() const = 0;
  // The calling vCPU's system registers, read on its own thread.
  virtual absl::StatusOr<kvm_sregs> CallerSregs() = 0;
  // Hands AP `cpu` (1 .. vcpus-1, not started before) its entry; it enters it on its
  // own thread.
  virtual absl::Status StartAp(int cpu, const ApEntry& entry) = 0;
  // A fixed, edge-triggered interrupt `vector` to the LAPIC of APIC ID `cpu`
  // (KVM_SIGNAL_MSI): true when KVM delivered it, false when the guest blocked it.
  virtual absl::StatusOr<bool> SignalIpi(int cpu, uint32_t vector) = 0;
};

class SmpHypercalls {
 public:
  // `memory` and `machine` must outlive the calls. `vcpus`: the machine's (1 to
  // SIGVISOR_MAX_CPUS).
  SmpHypercalls(GuestMemory& memory, SmpMachine& machine, int vcpus)
      : memory_(memory), machine_(machine), vcpus_(vcpus) {}

  // Registers cpu_up and send_ipi in `table`.
  absl::Status Register(HypercallTable& table);

  HypercallResult CpuUp(uint32_t args_gpa);
  HypercallResult SendIpi(uint32_t args_gpa);

  // IPIs the VMM delivered (KVM_SIGNAL_MSI said so) through send_ipi: to vCPU `cpu`,
  // and in all. Any thread, at any time.
  uint64_t ipis_delivered(int cpu) const;
  uint64_t ipis_delivered() const;
  // Those KVM did not deliver (the target's LAPIC refused them: not enabled).
  uint64_t ipis_blocked() const { return blocked_.load(std::memory_order_relaxed); }
  // The APs started (vCPU 0's thread, or after the run).
  int aps_started() const;

 private:
  GuestMemory& memory_;
  SmpMachine& machine_;
  int vcpus_;
  std::array<bool, SIGVISOR_MAX_CPUS> started_ = {};  // CPU_UP: vCPU 0's thread only
  std::array<std::atomic<uint64_t>, SIGVISOR_MAX_CPUS> delivered_ = {};
  std::atomic<uint64_t> blocked_{0};
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_SMP_BOOT_H_
