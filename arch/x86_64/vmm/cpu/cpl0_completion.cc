#include "arch/x86_64/vmm/cpu/cpl0_completion.h"

#include <linux/kvm.h>

#include <array>

#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

constexpr uint8_t kInt3 = 0xcc;
constexpr uint8_t kVectorBp = 3;
constexpr uint64_t kCr0Paging = 1ull << 31;

Interception HostError(const absl::Status& status) {
  Interception out;
  out.verdict = Interception::Verdict::kHostError;
  out.diagnosis = absl::StrFormat("completing an instruction at CPL0: %s", status.message());
  return out;
}

}  // namespace

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
  const bool readable =
      (sregs->cr0 & kCr0Paging) != 0
          ? cpu_.ReadVirtual(sregs->cr3, regs->rip, opcode)
          : cpu_.memory().Read(regs->rip, opcode).ok();
  if (!readable || opcode[0] != kInt3) return {};

  // #BP is a trap: the frame's RIP is the instruction after the int3.
  regs->rip += 1;
  if (absl::Status s = cpu_.SetRegs(*regs); !s.ok()) return HostError(s);
  absl::StatusOr<kvm_vcpu_events> events = cpu_.vcpu().GetEvents();
  if (!events.ok()) return HostError(events.status());
  events->exception.injected = 1;
  events->exception.pending = 0;
  events->exception.nr = kVectorBp;
  events->exception.has_error_code = 0;
  events->exception.error_code = 0;
  events->flags &= ~KVM_VCPUEVENT_VALID_PAYLOAD;
  if (absl::Status s = cpu_.vcpu().SetEvents(*events); !s.ok()) return HostError(s);
  ++completed_int3_;
  Interception out;
  out.verdict = Interception::Verdict::kHandled;
  out.detail = "int3 at CPL0 completed as #BP";
  return out;
}

std::vector<std::string> Cpl0Completion::Warnings() {
  if (completed_int3_ == 0) return {};
  return {absl::StrFormat(
      "%d int3 at CPL0 completed by sigvisor as #BP (this host's instruction emulator cannot "
      "run them; the exit ledger counts each)",
      completed_int3_)};
}

}  // namespace sigvisor::x86
