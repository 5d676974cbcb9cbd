// One x86-64 vCPU's state as a snapshot holds it, read from KVM and put back in the
// order KVM needs (docs/snapshots.md): what KVM's own selftests (vcpu_save_state) and
// Firecracker's vcpu.rs save, less what sigvisor's guests do not have (nested state,
// Hyper-V MSRs).
//
// The FPU: where the host gives KVM_GET_XSAVE it is saved and restored. Where it does
// not (a PVM host refuses it once a guest has run, and its KVM_GET_FPU reports MXCSR as
// 0), nothing is saved, and the restore is still exact because of where sigvisor's
// guests are saved: at their quiescent point (SIGVISOR_HC_ORDERS), before any FPU or
// SSE instruction has run (the guest is built -mgeneral-regs-only), so the saved
// vCPU's FPU is in the state KVM gives every new vCPU, which is the restored vCPU's.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_VCPU_SNAPSHOT_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_VCPU_SNAPSHOT_H_

#include <linux/kvm.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/kvm/kvm.h"
#include "vmm/snapshot/snapshot_parts.h"

namespace sigvisor::x86 {

struct VcpuSnapshot {
  kvm_regs regs = {};
  kvm_sregs sregs = {};
  kvm_debugregs debugregs = {};
  kvm_vcpu_events events = {};
  kvm_mp_state mp_state = {};
  std::optional<kvm_lapic_state> lapic;  // with the in-kernel irqchip
  std::optional<KvmXsave> xsave;         // where the host gives it (see above)
  std::optional<kvm_xcrs> xcrs;          // with xsave
  // Every MSR of KVM_GET_MSR_INDEX_LIST the host gave for this vCPU, in the order
  // they are restored (the TSC before the TSC deadline).
  std::vector<kvm_msr_entry> msrs;
  // The listed MSRs the host refused to read: not saved, so a restored vCPU has KVM's
  // initial value there. Kept to be reported (docs/snapshots.md says which they are).
  std::vector<uint32_t> msrs_refused;
};

// Reads `vcpu`'s state. The caller has completed any pending I/O first
// (KvmVcpu::CompletePendingIo). `lapic`: the VM has the in-kernel irqchip.
absl::StatusOr<VcpuSnapshot> CaptureVcpu(const KvmSystem& kvm, KvmVcpu& vcpu, bool lapic);

// Puts `state` into a vCPU that has its CPUID set and has never run: MP state,
// REGS, SREGS, XSAVE and XCRS, DEBUGREGS, LAPIC (after SREGS: SREGS carries the APIC
// base), MSRS, and vCPU events last (REGS would clear a pending exception). An MSR
// the host refuses to set fails the restore unless the new vCPU already holds the
// saved value (then nothing is lost), naming it.
absl::Status RestoreVcpu(KvmVcpu& vcpu, const VcpuSnapshot& state);

// The state as a snapshot part named `name` ("vcpu0"), and back. Each KVM struct is
// kept as its bytes with its size: a build whose kernel headers define it otherwise
// refuses the part instead of misreading it.
SnapshotPart EncodeVcpu(const VcpuSnapshot& state, std::string name);
absl::StatusOr<VcpuSnapshot> DecodeVcpu(const SnapshotPart& part);

// What a snapshot's report says about the FPU: "xsave" or "reset state (...)".
std::string FpuSource(const VcpuSnapshot& state);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_VCPU_SNAPSHOT_H_
