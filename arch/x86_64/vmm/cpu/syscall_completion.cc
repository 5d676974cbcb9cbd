#include "arch/x86_64/vmm/cpu/syscall_completion.h"

#include <array>
#include <string_view>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/cpu/idt_gates.h"
#include "arch/x86_64/vmm/cpu/msr_index.h"
#include "arch/x86_64/vmm/cpu/segments.h"

namespace sigvisor::x86 {
namespace {

constexpr int kVectorPf = 14;
// #PF error code bits: a write, from user mode, an instruction fetch.
constexpr uint64_t kPfWrite = 1u << 1, kPfUser = 1u << 2, kPfFetch = 1u << 4;
constexpr uint64_t kRflagsFixed = 1u << 1;  // bit 1 always reads as 1
constexpr uint64_t kRflagsRf = 1u << 16;
constexpr uint64_t kCr0Paging = 1ull << 31;

Interception HostError(const absl::Status& status) {
  return Interception::HostError("completing SYSCALL at CPL0", status);
}

}  // namespace

bool IsStrandedSyscall(const ExceptionFrame& frame, uint64_t cr2, const SyscallMsrs& msrs) {
  if (msrs.lstar == 0) return false;
  if ((frame.cs & 3) != 3) return false;
  if ((frame.error_code & (kPfUser | kPfFetch | kPfWrite)) != (kPfUser | kPfFetch)) return false;
  return frame.rip == msrs.lstar && cr2 == msrs.lstar;
}

void EnterSyscall(const ExceptionFrame& frame, const SyscallMsrs& msrs, kvm_regs& regs,
                  kvm_sregs& sregs) {
  // As the SDM's SYSCALL: CS.Selector = STAR[47:32] AND 0xFFFC, SS.Selector =
  // STAR[47:32] + 8; both descriptors fixed (flat, DPL 0) rather than read from the GDT.
  const auto star_cs = static_cast<uint16_t>(msrs.star >> 32);
  regs.rip = msrs.lstar;
  regs.rsp = frame.rsp;
  regs.rflags = (frame.rflags & ~msrs.fmask & ~kRflagsRf) | kRflagsFixed;
  sregs.cs = FlatSegment(star_cs & 0xfffc, FlatSegmentKind::kCode64);
  sregs.ss = FlatSegment(static_cast<uint16_t>(star_cs + 8), FlatSegmentKind::kData);
}

absl::Status SyscallCompletion::FollowPageFaultGate() {
  absl::StatusOr<kvm_sregs> sregs = cpu_.GetSregs();
  if (!sregs.ok()) return sregs.status();
  if ((sregs->cr0 & kCr0Paging) == 0) return absl::OkStatus();
  absl::StatusOr<uint64_t> lstar = cpu_.vcpu().GetMsr(kMsrLstar);
  if (!lstar.ok()) return lstar.status();
  if (*lstar == 0) return absl::OkStatus();
  std::optional<IdtGate> gate = ReadIdtGate(cpu_, *sregs, kVectorPf);
  if (!gate || (armed_ && *armed_ == gate->handler)) return absl::OkStatus();
  GuestDebug& debug = cpu_.debug();
  if (armed_ && !stepping_) {
    if (absl::Status s = debug.RemoveBreakpoint(*armed_, GuestDebug::BreakKind::kExecute, 1);
        !s.ok()) {
      return s;
    }
  }
  armed_.reset();
  absl::StatusOr<int> slot = debug.AddBreakpoint(gate->handler, GuestDebug::BreakKind::kExecute, 1);
  if (!slot.ok()) return slot.status();
  armed_ = gate->handler;
  return absl::OkStatus();
}

void SyscallCompletion::Arm() {
  if (absl::Status s = FollowPageFaultGate(); !s.ok()) failure_ = std::string(s.message());
}

void SyscallCompletion::Observe(const ObservedExit& observed) {
  const VmExit& exit = observed.exit;
  if (stepping_) {
    // The step's exit, whoever took it (a tracer that steps too takes it first): the
    // entry's first instruction has run, and the breakpoint goes back.
    if (exit.kind != ExitKind::kDebug || !cpu_.debug().IsVmmStep(exit.raw_detail)) return;
    stepping_ = false;
    ++stepped_;
    GuestDebug& debug = cpu_.debug();
    absl::Status s = debug.SetSingleStep(GuestDebug::kStepSyscallCompletion, false);
    if (s.ok()) s = debug.AddBreakpoint(*armed_, GuestDebug::BreakKind::kExecute, 1).status();
    if (!s.ok()) {
      failure_ = std::string(s.message());
      armed_.reset();
    }
    return;
  }
  if (settled_ || !failure_.empty()) return;
  if (absl::Status s = FollowPageFaultGate(); !s.ok()) failure_ = std::string(s.message());
}

Interception SyscallCompletion::OnBreakpoint() {
  absl::StatusOr<kvm_regs> regs = cpu_.GetRegs();
  if (!regs.ok()) return HostError(regs.status());
  absl::StatusOr<kvm_sregs> sregs = cpu_.GetSregs();
  if (!sregs.ok()) return HostError(sregs.status());
  SyscallMsrs msrs;
  for (auto [index, value] : {std::pair{kMsrStar, &msrs.star}, std::pair{kMsrLstar, &msrs.lstar},
                              std::pair{kMsrSyscallMask, &msrs.fmask}}) {
    absl::StatusOr<uint64_t> msr = cpu_.vcpu().GetMsr(index);
    if (!msr.ok()) return HostError(msr.status());
    *value = *msr;
  }
  std::array<uint64_t, 6> words = {};
  if (cpu_.ReadVirtual(sregs->cr3, regs->rsp,
                       {reinterpret_cast<uint8_t*>(words.data()), sizeof(words)})) {
    const ExceptionFrame frame = {words[0], words[1], words[2], words[3], words[4], words[5]};
    if (IsStrandedSyscall(frame, sregs->cr2, msrs)) {
      EnterSyscall(frame, msrs, *regs, *sregs);
      if (absl::Status s = cpu_.SetSregs(*sregs); !s.ok()) return HostError(s);
      if (absl::Status s = cpu_.SetRegs(*regs); !s.ok()) return HostError(s);
      ++completed_;
      settled_ = true;
      return Interception::Handled("SYSCALL completed at CPL0");
    }
  }
  // An ordinary page fault: its entry's first instruction runs with the breakpoint
  // lifted (an execution breakpoint fires again at the same RIP otherwise).
  GuestDebug& debug = cpu_.debug();
  if (absl::Status s = debug.RemoveBreakpoint(*armed_, GuestDebug::BreakKind::kExecute, 1);
      !s.ok()) {
    return HostError(s);
  }
  if (absl::Status s = debug.SetSingleStep(GuestDebug::kStepSyscallCompletion, true); !s.ok()) {
    return HostError(s);
  }
  stepping_ = true;
  return Interception::Handled("page-fault entry reached (not a SYSCALL)");
}

Interception SyscallCompletion::Intercept(const VmExit& exit) {
  if (exit.kind != ExitKind::kDebug || !armed_) return {};
  GuestDebug& debug = cpu_.debug();
  const uint64_t dr6 = exit.raw_detail;
  if (stepping_) {
    // Observe() puts the breakpoint back.
    if (!debug.IsVmmStep(dr6)) return {};
    return Interception::Handled("page-fault entry stepped");
  }
  std::optional<int> hit = debug.VmmBreakpointHit(dr6);
  if (!hit || debug.BreakpointAddress(*hit) != armed_ || exit.address != *armed_) return {};
  return OnBreakpoint();
}

std::vector<std::string> SyscallCompletion::Warnings() {
  std::vector<std::string> warnings;
  if (!failure_.empty()) {
    warnings.push_back(absl::StrFormat(
        "sigvisor could not watch the kernel's page-fault entry, so a SYSCALL from user "
        "mode stays at CPL3 on this host: %s",
        failure_));
  }
  if (completed_ > 0) {
    warnings.push_back(absl::StrFormat(
        "sigvisor completed %d SYSCALLs at CPL0 (this host leaves SYSCALL at CPL3) and "
        "stepped %d other page faults past its breakpoint; the exit ledger counts each",
        completed_, stepped_));
  }
  return warnings;
}

}  // namespace sigvisor::x86
