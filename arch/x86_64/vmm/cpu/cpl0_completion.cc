#include "arch/x86_64/vmm/cpu/cpl0_completion.h"

#include <linux/kvm.h>

#include <array>
#include <string_view>

#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

constexpr uint8_t kInt3 = 0xcc;
constexpr uint8_t kFwait = 0x9b;
constexpr uint8_t kVectorBp = 3;
constexpr uint8_t kVectorNm = 7;
constexpr uint8_t kVectorMf = 16;
constexpr uint64_t kCr0Mp = 1ull << 1;
constexpr uint64_t kCr0Ts = 1ull << 3;
constexpr uint64_t kCr0Paging = 1ull << 31;
constexpr uint16_t kFswErrorSummary = 1u << 7;

Interception HostError(const absl::Status& status) {
  return Interception::HostError("completing an instruction at CPL0", status);
}

}  // namespace

absl::Status Cpl0Completion::Complete(kvm_regs& regs, uint64_t length,
                                      std::optional<uint8_t> vector) {
  regs.rip += length;
  if (absl::Status s = cpu_.SetRegs(regs); !s.ok()) return s;
  if (!vector) return absl::OkStatus();
  absl::StatusOr<kvm_vcpu_events> events = cpu_.vcpu().GetEvents();
  if (!events.ok()) return events.status();
  events->exception.injected = 1;
  events->exception.pending = 0;
  events->exception.nr = *vector;
  events->exception.has_error_code = 0;
  events->exception.error_code = 0;
  events->flags &= ~KVM_VCPUEVENT_VALID_PAYLOAD;
  return cpu_.vcpu().SetEvents(*events);
}

Interception Cpl0Completion::Intercept(const VmExit& exit) {
  if (exit.kind != ExitKind::kInternalError ||
      exit.raw_detail != KVM_INTERNAL_ERROR_EMULATION) {
    return {};
  }
  absl::StatusOr<int> cpl = cpu_.Cpl();
  if (!cpl.ok()) return HostError(cpl.status());
  if (*cpl != 0) return {};
  absl::StatusOr<kvm_sregs> sregs = cpu_.GetSregs();
  if (!sregs.ok()) return HostError(sregs.status());
  absl::StatusOr<kvm_regs> regs = cpu_.GetRegs();
  if (!regs.ok()) return HostError(regs.status());
  // The byte at RIP, through the guest's page tables where paging is on; a RIP that
  // is not readable guest memory is left to the failure report.
  std::array<uint8_t, 1> opcode = {};
  const bool readable = (sregs->cr0 & kCr0Paging) != 0
                            ? cpu_.ReadVirtual(sregs->cr3, regs->rip, opcode)
                            : cpu_.memory().Read(regs->rip, opcode).ok();
  if (!readable) return {};

  if (opcode[0] == kInt3) {
    // #BP is a trap: the frame's RIP is the instruction after the int3.
    if (absl::Status s = Complete(*regs, 1, kVectorBp); !s.ok()) return HostError(s);
    ++completed_int3_;
    return Interception::Handled("int3 at CPL0 completed as #BP");
  }
  if (opcode[0] == kFwait) {
    // Both exceptions are faults: RIP stays at the fwait.
    if ((sregs->cr0 & (kCr0Ts | kCr0Mp)) == (kCr0Ts | kCr0Mp)) {
      if (absl::Status s = Complete(*regs, 0, kVectorNm); !s.ok()) return HostError(s);
      ++completed_fwait_;
      return Interception::Handled("fwait at CPL0 completed as #NM");
    }
    // KVM's x87 status word. (On this project's PVM hosts KVM_GET_FPU's MXCSR reads 0;
    // its x87 words read as a CPU's, the control word 0x37f after reset.)
    absl::StatusOr<kvm_fpu> fpu = cpu_.vcpu().GetFpu();
    if (!fpu.ok()) return HostError(fpu.status());
    if ((fpu->fsw & kFswErrorSummary) != 0) {
      if (absl::Status s = Complete(*regs, 0, kVectorMf); !s.ok()) return HostError(s);
      ++completed_fwait_;
      return Interception::Handled("fwait at CPL0 completed as #MF");
    }
    if (absl::Status s = Complete(*regs, 1, std::nullopt); !s.ok()) return HostError(s);
    ++completed_fwait_;
    return Interception::Handled("fwait at CPL0 completed");
  }
  return {};
}

std::vector<std::string> Cpl0Completion::Warnings() {
  if (completed_int3_ + completed_fwait_ == 0) return {};
  return {absl::StrFormat(
      "sigvisor completed %d int3 and %d fwait at CPL0 (this host's instruction emulator "
      "cannot run them; the exit ledger counts each)",
      completed_int3_, completed_fwait_)};
}

}  // namespace sigvisor::x86
