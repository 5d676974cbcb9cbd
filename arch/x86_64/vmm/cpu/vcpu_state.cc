#include "arch/x86_64/vmm/cpu/vcpu_state.h"

#include "arch/x86_64/vmm/cpu/page_walk.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kPageSize = 4096;
constexpr uint32_t kSyncAll = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS | KVM_SYNC_X86_EVENTS;

}  // namespace

VcpuState::VcpuState(KvmVcpu& vcpu, GuestMemory& memory, bool sync_regs)
    : vcpu_(vcpu), memory_(memory), sync_regs_(sync_regs), debug_(vcpu) {}

void VcpuState::RequestSync() {
  if (sync_regs_) vcpu_.run()->kvm_valid_regs |= kSyncAll;
}

bool VcpuState::Synced() const {
  return sync_regs_ && exited_ && (vcpu_.run()->kvm_valid_regs & kSyncAll) == kSyncAll;
}

absl::StatusOr<kvm_regs> VcpuState::GetRegs() {
  if (Synced()) return vcpu_.run()->s.regs.regs;
  return vcpu_.GetRegs();
}

absl::Status VcpuState::SetRegs(const kvm_regs& regs) {
  if (!Synced()) {
    if (absl::Status s = vcpu_.SetRegs(regs); !s.ok()) return s;
    return debug_.Reanchor();  // see PrepareEntry
  }
  vcpu_.run()->s.regs.regs = regs;
  vcpu_.run()->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
  return absl::OkStatus();
}

absl::Status VcpuState::PrepareEntry() {
  const bool moved = vcpu_.run()->kvm_dirty_regs & KVM_SYNC_X86_REGS;
  if (!debug_.single_stepping() || !(reanchor_ || moved)) return absl::OkStatus();
  reanchor_ = false;
  if (moved) {
    vcpu_.run()->kvm_dirty_regs &= ~KVM_SYNC_X86_REGS;
    if (absl::Status s = vcpu_.SetRegs(vcpu_.run()->s.regs.regs); !s.ok()) return s;
  }
  return debug_.Reanchor();
}

absl::StatusOr<kvm_sregs> VcpuState::GetSregs() {
  if (Synced()) return vcpu_.run()->s.regs.sregs;
  return vcpu_.GetSregs();
}

absl::Status VcpuState::SetSregs(const kvm_sregs& sregs) {
  if (!Synced()) return vcpu_.SetSregs(sregs);
  vcpu_.run()->s.regs.sregs = sregs;
  vcpu_.run()->kvm_dirty_regs |= KVM_SYNC_X86_SREGS;
  return absl::OkStatus();
}

absl::StatusOr<int> VcpuState::Cpl() {
  absl::StatusOr<kvm_sregs> sregs = GetSregs();
  if (!sregs.ok()) return sregs.status();
  return sregs->cs.dpl;
}

// Both directions translate the whole range first, so a range that is partly
// unmapped is refused before any byte moves.
bool VcpuState::ReadVirtual(uint64_t cr3, uint64_t gva, std::span<uint8_t> out) const {
  absl::StatusOr<std::vector<GuestPiece>> pieces = TranslateRange(memory_, cr3, gva, out.size());
  if (!pieces.ok()) return false;
  size_t offset = 0;
  for (const GuestPiece& piece : *pieces) {
    if (!memory_.Read(piece.gpa, out.subspan(offset, piece.length)).ok()) return false;
    offset += piece.length;
  }
  return true;
}

bool VcpuState::WriteVirtual(uint64_t cr3, uint64_t gva, std::span<const uint8_t> data) {
  absl::StatusOr<std::vector<GuestPiece>> pieces = TranslateRange(memory_, cr3, gva, data.size());
  if (!pieces.ok()) return false;
  size_t offset = 0;
  for (const GuestPiece& piece : *pieces) {
    if (!memory_.Write(piece.gpa, data.subspan(offset, piece.length)).ok()) return false;
    offset += piece.length;
  }
  return true;
}

std::vector<uint8_t> VcpuState::ReadVirtualUpTo(uint64_t cr3, uint64_t gva, size_t len) const {
  std::vector<uint8_t> out(len);
  size_t done = 0;
  while (done < len) {
    const uint64_t at = gva + done;
    const size_t chunk = std::min<size_t>(len - done, kPageSize - at % kPageSize);
    if (!ReadVirtual(cr3, at, {out.data() + done, chunk})) break;
    done += chunk;
  }
  out.resize(done);
  return out;
}

}  // namespace sigvisor::x86
