// One x86-64 vCPU's state as a snapshot holds it, read from KVM and put back in the
// order KVM needs (docs/snapshots.md): what KVM's own selftests (vcpu_save_state) and
// Firecracker's vcpu.rs save, less what sigvisor's guests do not have (nested state,
// Hyper-V MSRs).
//
// The FPU: what is saved of it depends on where the guest's FPU state is at its
// quiescent point (FpuAtQuiescentPoint), because a PVM host refuses KVM_GET_XSAVE once
// a guest has run (and its KVM_GET_FPU reports MXCSR as 0), so on such a host the
// guest must not need it (docs/snapshots.md, "The FPU"):
// - the bundled kernel is saved before any FPU or SSE instruction has run (it is built
//   -mgeneral-regs-only), so its FPU is in the state KVM gives every new vCPU, which is
//   the restored vCPU's; KVM_GET_XSAVE's state is saved too where the host gives it;
// - Linux's init puts its FPU state (the only one in the registers then) in its own
//   memory before the point and back after it, so nothing is saved of it;
// - a guest that did neither needs KVM_GET_XSAVE, or it cannot be saved.
// The XCRs (XCR0: which components the guest's kernel enabled) are saved wherever the
// host gives them: the guest's own xrstor needs them back.
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

// Where a guest's FPU state is when it is saved, as its board knows it.
enum class FpuAtQuiescentPoint {
  kReset,        // no FPU instruction has run: KVM's reset state is the guest's
  kHeldByGuest,  // the guest holds it in its memory (SIGVISOR_LINUX_ORDERS_FPU_HELD)
  kInRegisters,  // only in the vCPU's registers: KVM_GET_XSAVE, or no snapshot
};

struct VcpuSnapshot {
  kvm_regs regs = {};
  kvm_sregs sregs = {};
  kvm_debugregs debugregs = {};
  kvm_vcpu_events events = {};
  kvm_mp_state mp_state = {};
  std::optional<kvm_lapic_state> lapic;  // with the in-kernel irqchip
  std::optional<KvmXsave> xsave;         // where needed or given (see above)
  std::optional<kvm_xcrs> xcrs;          // where the host gives them
  // Every MSR of KVM_GET_MSR_INDEX_LIST the host gave for this vCPU, in the order
  // they are restored (the TSC before the TSC deadline).
  std::vector<kvm_msr_entry> msrs;
  // The listed MSRs the host refused to read: not saved, so a restored vCPU has KVM's
  // initial value there. Kept to be reported (docs/snapshots.md says which they are).
  std::vector<uint32_t> msrs_refused;
};

// Reads `vcpu`'s state. The caller has completed any pending I/O first
// (KvmVcpu::CompletePendingIo). `lapic`: the VM has the in-kernel irqchip. `fpu`: where
// the guest's FPU state is; kInRegisters fails where the host refuses KVM_GET_XSAVE.
absl::StatusOr<VcpuSnapshot> CaptureVcpu(const KvmSystem& kvm, KvmVcpu& vcpu, bool lapic,
                                         FpuAtQuiescentPoint fpu);

// Puts `state` into a vCPU that has its CPUID set and has never run: MP state,
// REGS, SREGS, XSAVE, XCRS, DEBUGREGS, LAPIC (after SREGS: SREGS carries the APIC
// base), MSRS, and vCPU events last (REGS would clear a pending exception). An MSR
// the host refuses to set fails the restore unless the new vCPU already holds the
// saved value (then nothing is lost), naming it.
absl::Status RestoreVcpu(KvmVcpu& vcpu, const VcpuSnapshot& state);

// The state as a snapshot part named `name` ("vcpu0"), and back. Each KVM struct is
// kept as its bytes with its size: a build whose kernel headers define it otherwise
// refuses the part instead of misreading it.
SnapshotPart EncodeVcpu(const VcpuSnapshot& state, std::string name);
absl::StatusOr<VcpuSnapshot> DecodeVcpu(const SnapshotPart& part);

// What a snapshot's report says about the FPU: "xsave", "held by the guest (...)" or
// "reset state (...)".
std::string FpuSource(const VcpuSnapshot& state, FpuAtQuiescentPoint fpu);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_VCPU_SNAPSHOT_H_
