#include "arch/x86_64/vmm/trap/kvm_trap_cpu.h"

#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "arch/x86_64/vmm/cpu/page_walk.h"
#include "vmm/kvm/kvm_error.h"
#include "vmm/kvm/kvm_layouts.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kPageSize = 4096;
constexpr uint32_t kSyncAll = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS | KVM_SYNC_X86_EVENTS;

// KVM_GET_MSRS / KVM_SET_MSRS of one MSR: true when KVM processed it, false when it
// refused (an MSR this vCPU does not have, or a value it does not take).
absl::StatusOr<bool> OneMsr(int vcpu_fd, unsigned long request, const char* name, uint32_t index,
                            uint64_t& value) {
  struct {
    KvmMsrsHeader header;
    kvm_msr_entry entry;
  } msrs = {};
  static_assert(sizeof(msrs) == sizeof(KvmMsrsHeader) + sizeof(kvm_msr_entry));
  msrs.header.nmsrs = 1;
  msrs.entry.index = index;
  msrs.entry.data = value;
  int done;
  do {
    done = ::ioctl(vcpu_fd, request, &msrs);
  } while (done < 0 && errno == EINTR);
  if (done < 0) return ErrnoError(name, errno);
  value = msrs.entry.data;
  return done == 1;
}

// Calls `each(gpa, offset, length)` for the pieces of [gva, gva + len) page by page;
// false (having called nothing) when a page is not mapped or not in guest RAM.
template <typename Each>
bool ForEachPage(const GuestMemory& memory, uint64_t cr3, uint64_t gva, size_t len, Each each) {
  struct Piece {
    uint64_t gpa;
    size_t offset;
    size_t length;
  };
  std::vector<Piece> pieces;
  for (size_t done = 0; done < len;) {
    const uint64_t at = gva + done;
    const size_t chunk = std::min<size_t>(len - done, kPageSize - at % kPageSize);
    absl::StatusOr<uint64_t> gpa = TranslateGva(memory, cr3, at);
    if (!gpa.ok() || !memory.Contains(*gpa, chunk)) return false;
    pieces.push_back({*gpa, done, chunk});
    done += chunk;
  }
  for (const Piece& piece : pieces) each(piece.gpa, piece.offset, piece.length);
  return true;
}

}  // namespace

absl::Status KvmTrapCpu::Start() {
  if (sync_regs_) vcpu_.run()->kvm_valid_regs = kSyncAll;
  uint64_t value = 0;
  absl::StatusOr<bool> got =
      OneMsr(vcpu_.fd(), kKvmGetMsrs, "KVM_GET_MSRS", trap::kMsrKernelGsBase, value);
  if (!got.ok()) return got.status();
  if (!*got) return absl::InternalError("KVM_GET_MSRS refused KERNEL_GS_BASE");
  kernel_gs_base_ = value;
  return absl::OkStatus();
}

// One kind of vCPU state, from the kvm_run page when it is synchronized there (and
// marked dirty for KVM to load at the next entry), else through its ioctls.
template <typename T, typename Get>
absl::StatusOr<T> KvmTrapCpu::Load(T kvm_sync_regs::*field, Get get) {
  if (sync_regs_) return vcpu_.run()->s.regs.*field;
  return (vcpu_.*get)();
}

template <typename T, typename Set>
absl::Status KvmTrapCpu::Store(T kvm_sync_regs::*field, uint64_t dirty_bit, const T& value,
                               Set set) {
  if (!sync_regs_) return (vcpu_.*set)(value);
  vcpu_.run()->s.regs.*field = value;
  vcpu_.run()->kvm_dirty_regs |= dirty_bit;
  return absl::OkStatus();
}

absl::StatusOr<kvm_regs> KvmTrapCpu::GetRegs() {
  return Load(&kvm_sync_regs::regs, &KvmVcpu::GetRegs);
}
absl::Status KvmTrapCpu::SetRegs(const kvm_regs& regs) {
  return Store(&kvm_sync_regs::regs, KVM_SYNC_X86_REGS, regs, &KvmVcpu::SetRegs);
}
absl::StatusOr<kvm_sregs> KvmTrapCpu::GetSregs() {
  return Load(&kvm_sync_regs::sregs, &KvmVcpu::GetSregs);
}
absl::Status KvmTrapCpu::SetSregs(const kvm_sregs& sregs) {
  return Store(&kvm_sync_regs::sregs, KVM_SYNC_X86_SREGS, sregs, &KvmVcpu::SetSregs);
}
absl::StatusOr<kvm_vcpu_events> KvmTrapCpu::GetEvents() {
  return Load(&kvm_sync_regs::events, &KvmVcpu::GetEvents);
}
absl::Status KvmTrapCpu::SetEvents(const kvm_vcpu_events& events) {
  return Store(&kvm_sync_regs::events, KVM_SYNC_X86_EVENTS, events, &KvmVcpu::SetEvents);
}

absl::Status KvmTrapCpu::EnterGuestDebug(const trap::DebugRegs& regs) {
  guest_debug_ = regs;
  return SetDebugRegs(regs);
}

absl::StatusOr<trap::DebugRegs> KvmTrapCpu::GetDebugRegs() {
  if (guest_debug_) return *guest_debug_;
  absl::StatusOr<kvm_debugregs> kvm = vcpu_.GetDebugRegs();
  if (!kvm.ok()) return kvm.status();
  trap::DebugRegs regs;
  for (int i = 0; i < 4; ++i) regs.dr[i] = kvm->db[i];
  regs.dr6 = kvm->dr6;
  regs.dr7 = kvm->dr7;
  return regs;
}

absl::Status KvmTrapCpu::SetDebugRegs(const trap::DebugRegs& regs) {
  if (guest_debug_ && arbiter_ != nullptr) {
    if (absl::Status s = arbiter_->SetGuestOwned({regs.dr[0], regs.dr[1], regs.dr[2], regs.dr[3]},
                                                 regs.dr7);
        !s.ok()) {
      return s;
    }
    guest_debug_ = regs;
    return absl::OkStatus();
  }
  if (guest_debug_) {
    kvm_guest_debug debug = {};
    debug.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP;
    for (int i = 0; i < 4; ++i) debug.arch.debugreg[i] = regs.dr[i];
    debug.arch.debugreg[7] = regs.dr7 | trap::kDr7Gd;
    if (absl::Status s = vcpu_.SetGuestDebug(debug); !s.ok()) return s;
    guest_debug_ = regs;
    return absl::OkStatus();
  }
  kvm_debugregs kvm = {};
  for (int i = 0; i < 4; ++i) kvm.db[i] = regs.dr[i];
  kvm.dr6 = regs.dr6;
  kvm.dr7 = regs.dr7;
  return vcpu_.SetDebugRegs(kvm);
}

absl::StatusOr<std::optional<uint64_t>> KvmTrapCpu::GetMsr(uint32_t index) {
  if (index == trap::kMsrFsBase || index == trap::kMsrGsBase) {
    absl::StatusOr<kvm_sregs> sregs = GetSregs();
    if (!sregs.ok()) return sregs.status();
    return std::optional<uint64_t>(index == trap::kMsrFsBase ? sregs->fs.base : sregs->gs.base);
  }
  if (index == trap::kMsrKernelGsBase && kernel_gs_base_) return kernel_gs_base_;
  uint64_t value = 0;
  absl::StatusOr<bool> got = OneMsr(vcpu_.fd(), kKvmGetMsrs, "KVM_GET_MSRS", index, value);
  if (!got.ok()) return got.status();
  return *got ? std::optional<uint64_t>(value) : std::nullopt;
}

absl::StatusOr<bool> KvmTrapCpu::SetMsr(uint32_t index, uint64_t value) {
  if (index == trap::kMsrFsBase || index == trap::kMsrGsBase) {
    absl::StatusOr<kvm_sregs> sregs = GetSregs();
    if (!sregs.ok()) return sregs.status();
    (index == trap::kMsrFsBase ? sregs->fs.base : sregs->gs.base) = value;
    if (absl::Status s = SetSregs(*sregs); !s.ok()) return s;
    return true;
  }
  absl::StatusOr<bool> set = OneMsr(vcpu_.fd(), kKvmSetMsrs, "KVM_SET_MSRS", index, value);
  if (set.ok() && *set && index == trap::kMsrKernelGsBase) kernel_gs_base_ = value;
  return set;
}

bool KvmTrapCpu::ReadVirtual(uint64_t cr3, uint64_t gva, std::span<uint8_t> out) {
  return ForEachPage(memory_, cr3, gva, out.size(), [&](uint64_t gpa, size_t offset, size_t n) {
    (void)memory_.Read(gpa, out.subspan(offset, n));  // range checked by ForEachPage
  });
}

bool KvmTrapCpu::WriteVirtual(uint64_t cr3, uint64_t gva, std::span<const uint8_t> data) {
  return ForEachPage(memory_, cr3, gva, data.size(), [&](uint64_t gpa, size_t offset, size_t n) {
    (void)memory_.Write(gpa, data.subspan(offset, n));
  });
}

absl::Status KvmTrapCpu::InjectFault(const trap::Fault& fault) {
  if (fault.vector == trap::kVectorPf) {
    absl::StatusOr<kvm_sregs> sregs = GetSregs();
    if (!sregs.ok()) return sregs.status();
    sregs->cr2 = fault.cr2;
    if (absl::Status s = SetSregs(*sregs); !s.ok()) return s;
  }
  absl::StatusOr<kvm_vcpu_events> events = GetEvents();
  if (!events.ok()) return events.status();
  events->exception.injected = 1;
  events->exception.pending = 0;
  events->exception.nr = fault.vector;
  events->exception.has_error_code = fault.error_code.has_value();
  events->exception.error_code = fault.error_code.value_or(0);
  events->flags &= ~KVM_VCPUEVENT_VALID_PAYLOAD;
  return SetEvents(*events);
}

}  // namespace sigvisor::x86
