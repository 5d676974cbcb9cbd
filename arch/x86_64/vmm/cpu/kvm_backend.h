// The KVM backend on x86-64: runs one vCPU and turns kvm_run into VmExit values.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_KVM_BACKEND_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_KVM_BACKEND_H_

#include <pthread.h>

#include <atomic>
#include <optional>

#include "vmm/kvm/kvm.h"
#include "vmm/kvm/stats_fd.h"
#include "vmm/run/backend.h"

namespace sigvisor::x86 {

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

 private:
  KvmVcpu& vcpu_;
  std::optional<StatsFd> stats_;
  VcpuState* state_;
  // The thread inside Run(), for the watchdog's signal (0 until the first Run()).
  std::atomic<pthread_t> run_thread_{0};
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_KVM_BACKEND_H_
