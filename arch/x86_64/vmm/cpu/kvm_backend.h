// The KVM backend on x86-64: runs one vCPU and turns kvm_run into VmExit values.
//
// With the VMM's own local APIC (UseVmmLapic: a machine made without KVM's irqchip)
// the backend is also where its interrupts enter the guest, as QEMU's kernel-irqchip=off
// does it: before each KVM_RUN it injects the APIC's deliverable vector with
// KVM_INTERRUPT when kvm_run says the guest takes one, and else asks KVM for the
// interrupt window; a `hlt` exits to it, and the next Run() waits outside KVM_RUN
// until the APIC has a vector for the vCPU (or a kick), as KVM's own halt would inside.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_KVM_BACKEND_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_KVM_BACKEND_H_

#include <pthread.h>

#include <atomic>
#include <optional>

#include "vmm/kvm/kvm.h"
#include "vmm/kvm/stats_fd.h"
#include "vmm/run/backend.h"

namespace sigvisor::x86 {

class LocalApics;
class VcpuState;

class KvmBackend : public Backend {
 public:
  // `vcpu` must outlive the backend. `stats` may be absent (older kernels). `state`
  // (optional; must outlive the backend) learns of every exit: its synchronized
  // registers are then valid.
  KvmBackend(KvmVcpu& vcpu, std::optional<StatsFd> stats, VcpuState* state = nullptr);

  absl::StatusOr<VmExit> Run() override;
  void Kick() override;
  absl::StatusOr<StatsSnapshot> ReadStats() override;
  absl::StatusOr<CpuLocation> Locate() override;
  std::string DescribeInterrupts() override;
  // Skips `bytes` of the current instruction (the probe steps over a trapping one).
  // x86's own: not on the generic Backend seam.
  absl::Status AdvanceRip(uint64_t bytes);
  // This vCPU's interrupts come from `apics` (vCPU `index` there; it must outlive the
  // backend), which kicks the backend when one arrives. Before the first Run().
  void UseVmmLapic(LocalApics& apics, int index);

 private:
  // The VMM's local APIC's next vector into the guest, or the window asked for.
  absl::Status InjectFromVmmLapic();

  KvmVcpu& vcpu_;
  std::optional<StatsFd> stats_;
  VcpuState* state_;
  // The thread inside Run(), for the watchdog's signal (0 until the first Run()).
  std::atomic<pthread_t> run_thread_{0};
  LocalApics* apics_ = nullptr;  // UseVmmLapic
  int apic_index_ = 0;
  // The guest executed `hlt` and no interrupt has come since (the run thread's).
  bool halted_ = false;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_KVM_BACKEND_H_
