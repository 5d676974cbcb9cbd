#include "arch/x86_64/vmm/cpu/vcpu_snapshot.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/msr_index.h"

namespace sigvisor::x86 {
namespace {

constexpr uint32_t kMsrTsc = 0x10;
constexpr uint32_t kMsrTscDeadline = 0x6e0;

// Restore order: the TSC first (the deadline is relative to it), the deadline last.
int RestoreRank(uint32_t index) {
  if (index == kMsrTsc) return 0;
  if (index == kMsrTscDeadline) return 2;
  return 1;
}

}  // namespace

absl::StatusOr<VcpuSnapshot> CaptureVcpu(const KvmSystem& kvm, KvmVcpu& vcpu, bool lapic,
                                         FpuAtQuiescentPoint fpu) {
  VcpuSnapshot state;
  // MP state first and events last, as KVM's selftests read them.
  absl::StatusOr<kvm_mp_state> mp = vcpu.GetMpState();
  if (!mp.ok()) return mp.status();
  state.mp_state = *mp;
  absl::StatusOr<kvm_regs> regs = vcpu.GetRegs();
  if (!regs.ok()) return regs.status();
  state.regs = *regs;
  absl::StatusOr<kvm_sregs> sregs = vcpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  state.sregs = *sregs;
  if (fpu != FpuAtQuiescentPoint::kHeldByGuest) {
    absl::StatusOr<KvmXsave> xsave = vcpu.GetXsave();
    if (xsave.ok()) {
      state.xsave = *xsave;
    } else if (fpu == FpuAtQuiescentPoint::kInRegisters) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the guest's FPU state is in its vCPU's registers only, and the host does not give "
          "it: %s",
          xsave.status().message()));
    }
  }
  if (absl::StatusOr<kvm_xcrs> xcrs = vcpu.GetXcrs(); xcrs.ok()) state.xcrs = *xcrs;
  absl::StatusOr<kvm_debugregs> debugregs = vcpu.GetDebugRegs();
  if (!debugregs.ok()) return debugregs.status();
  state.debugregs = *debugregs;
  if (lapic) {
    absl::StatusOr<kvm_lapic_state> apic = vcpu.GetLapic();
    if (!apic.ok()) return apic.status();
    state.lapic = *apic;
  }
  absl::StatusOr<std::vector<uint32_t>> listed = kvm.MsrIndexList();
  if (!listed.ok()) return listed.status();
  absl::StatusOr<std::vector<kvm_msr_entry>> msrs = vcpu.GetMsrs(*listed, &state.msrs_refused);
  if (!msrs.ok()) return msrs.status();
  state.msrs = *std::move(msrs);
  if (fpu == FpuAtQuiescentPoint::kHeldByGuest) {
    // A user-mode xsave holds the user components only; the kernel's supervisor ones
    // (CET, PASID) would be lost.
    for (const kvm_msr_entry& msr : state.msrs) {
      if (msr.index == kMsrXss && msr.data != 0) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "the guest enabled supervisor FPU state (IA32_XSS = %#x), which its init's "
            "own xsave does not hold",
            msr.data));
      }
    }
  }
  std::stable_sort(state.msrs.begin(), state.msrs.end(),
                   [](const kvm_msr_entry& a, const kvm_msr_entry& b) {
                     return RestoreRank(a.index) < RestoreRank(b.index);
                   });
  absl::StatusOr<kvm_vcpu_events> events = vcpu.GetEvents();
  if (!events.ok()) return events.status();
  state.events = *events;
  return state;
}

absl::Status RestoreVcpu(KvmVcpu& vcpu, const VcpuSnapshot& state) {
  if (absl::Status s = vcpu.SetMpState(state.mp_state); !s.ok()) return s;
  if (absl::Status s = vcpu.SetRegs(state.regs); !s.ok()) return s;
  if (absl::Status s = vcpu.SetSregs(state.sregs); !s.ok()) return s;
  if (state.xsave) {
    if (absl::Status s = vcpu.SetXsave(*state.xsave); !s.ok()) return s;
  }
  if (state.xcrs) {
    if (absl::Status s = vcpu.SetXcrs(*state.xcrs); !s.ok()) return s;
  }
  if (absl::Status s = vcpu.SetDebugRegs(state.debugregs); !s.ok()) return s;
  if (state.lapic) {
    if (absl::Status s = vcpu.SetLapic(*state.lapic); !s.ok()) return s;
  }
  // One batch; an MSR the host refuses is checked against what the new vCPU holds and
  // skipped when that is the saved value, then the rest go in again.
  std::span<const kvm_msr_entry> msrs(state.msrs);
  while (!msrs.empty()) {
    size_t set = 0;
    absl::Status s = vcpu.SetMsrs(msrs, &set);
    if (s.ok()) break;
    if (set >= msrs.size()) return s;  // the ioctl itself failed
    const kvm_msr_entry& refused = msrs[set];
    absl::StatusOr<uint64_t> now = vcpu.GetMsr(refused.index);
    if (!now.ok() || *now != refused.data) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "restoring MSR %#x: the host refuses the saved value %#x (a new vCPU holds %s); "
          "take the snapshot on this host",
          refused.index, refused.data,
          now.ok() ? absl::StrFormat("%#x", *now) : std::string("nothing it can read")));
    }
    msrs = msrs.subspan(set + 1);
  }
  return vcpu.SetEvents(state.events);
}

namespace {
// Flags of the optional pieces, in the part's first word.
constexpr uint32_t kHasLapic = 1u << 0;
constexpr uint32_t kHasXsave = 1u << 1;
constexpr uint32_t kHasXcrs = 1u << 2;
}  // namespace

SnapshotPart EncodeVcpu(const VcpuSnapshot& state, std::string name) {
  PartWriter out(std::move(name));
  out.PutU32((state.lapic ? kHasLapic : 0) | (state.xsave ? kHasXsave : 0) |
             (state.xcrs ? kHasXcrs : 0));
  out.PutStruct(state.regs);
  out.PutStruct(state.sregs);
  out.PutStruct(state.debugregs);
  out.PutStruct(state.events);
  out.PutStruct(state.mp_state);
  if (state.lapic) out.PutStruct(*state.lapic);
  if (state.xsave) out.PutStruct(*state.xsave);
  if (state.xcrs) out.PutStruct(*state.xcrs);
  out.PutU32(static_cast<uint32_t>(state.msrs.size()));
  for (const kvm_msr_entry& msr : state.msrs) {
    out.PutU32(msr.index);
    out.PutU64(msr.data);
  }
  out.PutU32(static_cast<uint32_t>(state.msrs_refused.size()));
  for (uint32_t index : state.msrs_refused) out.PutU32(index);
  return std::move(out).Finish();
}

absl::StatusOr<VcpuSnapshot> DecodeVcpu(const SnapshotPart& part) {
  PartReader in(part);
  VcpuSnapshot state;
  const uint32_t flags = in.GetU32();
  if (flags & ~(kHasLapic | kHasXsave | kHasXcrs)) in.Fail("unknown flags");
  state.regs = in.GetStruct<kvm_regs>("kvm_regs");
  state.sregs = in.GetStruct<kvm_sregs>("kvm_sregs");
  state.debugregs = in.GetStruct<kvm_debugregs>("kvm_debugregs");
  state.events = in.GetStruct<kvm_vcpu_events>("kvm_vcpu_events");
  state.mp_state = in.GetStruct<kvm_mp_state>("kvm_mp_state");
  if (flags & kHasLapic) state.lapic = in.GetStruct<kvm_lapic_state>("kvm_lapic_state");
  if (flags & kHasXsave) state.xsave = in.GetStruct<KvmXsave>("kvm_xsave");
  if (flags & kHasXcrs) state.xcrs = in.GetStruct<kvm_xcrs>("kvm_xcrs");
  const uint32_t msrs = in.GetCount(12, "MSRs");
  for (uint32_t i = 0; i < msrs && in.ok(); ++i) {
    kvm_msr_entry msr = {};
    msr.index = in.GetU32();
    msr.data = in.GetU64();
    state.msrs.push_back(msr);
  }
  const uint32_t refused = in.GetCount(4, "refused MSRs");
  for (uint32_t i = 0; i < refused && in.ok(); ++i) state.msrs_refused.push_back(in.GetU32());
  if (absl::Status s = in.Done(); !s.ok()) return s;
  return state;
}

std::string FpuSource(const VcpuSnapshot& state, FpuAtQuiescentPoint fpu) {
  if (state.xsave) return "xsave";
  if (fpu == FpuAtQuiescentPoint::kHeldByGuest) {
    return "held by the guest (init saved it in its memory at its quiescent point)";
  }
  return "reset state (the host gives no XSAVE; the guest had run no FPU instruction)";
}

}  // namespace sigvisor::x86
