#include "arch/x86_64/vmm/signal/frame_builder.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kTopSignal = 64;  // signals 1..64

// access_ok(addr, size): [addr, addr + size) inside the user range.
bool UserRangeOk(uint64_t addr, uint64_t size) {
  return addr >= white_box::kUserBase && addr <= white_box::kUserTop &&
         size <= white_box::kUserTop - addr;
}

// The frame's fields the kernel writes, with their offsets and sizes, in one list
// for the plan and for naming a byte in reports.
struct FieldSpan {
  std::string_view name;
  size_t offset;
  size_t size;
};

#define SIGVISOR_FRAME_FIELD(path, name) \
  FieldSpan { name, offsetof(LinuxRtSigframe, path), sizeof(LinuxRtSigframe::path) }
#define SIGVISOR_MCONTEXT_FIELD(reg) \
  SIGVISOR_FRAME_FIELD(uc.uc_mcontext.reg, "uc.uc_mcontext." #reg)

// Every field of the frame but the siginfo, in frame order; `written` says whether
// the kernel's setup_rt_frame writes it (the stack_t's padding and sigcontext's
// reserved words it leaves as they were).
struct FrameField {
  FieldSpan span;
  bool written;
};

const FrameField kFrameFields[] = {
    {SIGVISOR_FRAME_FIELD(pretcode, "pretcode"), true},
    {SIGVISOR_FRAME_FIELD(uc.uc_flags, "uc.uc_flags"), true},
    {SIGVISOR_FRAME_FIELD(uc.uc_link, "uc.uc_link"), true},
    {SIGVISOR_FRAME_FIELD(uc.uc_stack.ss_sp, "uc.uc_stack.ss_sp"), true},
    {SIGVISOR_FRAME_FIELD(uc.uc_stack.ss_flags, "uc.uc_stack.ss_flags"), true},
    {SIGVISOR_FRAME_FIELD(uc.uc_stack.pad, "uc.uc_stack.pad"), false},
    {SIGVISOR_FRAME_FIELD(uc.uc_stack.ss_size, "uc.uc_stack.ss_size"), true},
    {SIGVISOR_MCONTEXT_FIELD(r8), true},
    {SIGVISOR_MCONTEXT_FIELD(r9), true},
    {SIGVISOR_MCONTEXT_FIELD(r10), true},
    {SIGVISOR_MCONTEXT_FIELD(r11), true},
    {SIGVISOR_MCONTEXT_FIELD(r12), true},
    {SIGVISOR_MCONTEXT_FIELD(r13), true},
    {SIGVISOR_MCONTEXT_FIELD(r14), true},
    {SIGVISOR_MCONTEXT_FIELD(r15), true},
    {SIGVISOR_MCONTEXT_FIELD(rdi), true},
    {SIGVISOR_MCONTEXT_FIELD(rsi), true},
    {SIGVISOR_MCONTEXT_FIELD(rbp), true},
    {SIGVISOR_MCONTEXT_FIELD(rbx), true},
    {SIGVISOR_MCONTEXT_FIELD(rdx), true},
    {SIGVISOR_MCONTEXT_FIELD(rax), true},
    {SIGVISOR_MCONTEXT_FIELD(rcx), true},
    {SIGVISOR_MCONTEXT_FIELD(rsp), true},
    {SIGVISOR_MCONTEXT_FIELD(rip), true},
    {SIGVISOR_MCONTEXT_FIELD(eflags), true},
    {SIGVISOR_MCONTEXT_FIELD(cs), true},
    {SIGVISOR_MCONTEXT_FIELD(gs), true},
    {SIGVISOR_MCONTEXT_FIELD(fs), true},
    {SIGVISOR_MCONTEXT_FIELD(ss), true},
    {SIGVISOR_MCONTEXT_FIELD(err), true},
    {SIGVISOR_MCONTEXT_FIELD(trapno), true},
    {SIGVISOR_MCONTEXT_FIELD(oldmask), true},
    {SIGVISOR_MCONTEXT_FIELD(cr2), true},
    {SIGVISOR_MCONTEXT_FIELD(fpstate), true},
    {SIGVISOR_MCONTEXT_FIELD(reserved1), false},
    {SIGVISOR_FRAME_FIELD(uc.uc_sigmask, "uc.uc_sigmask"), true},
};

#undef SIGVISOR_MCONTEXT_FIELD
#undef SIGVISOR_FRAME_FIELD

constexpr std::string_view kPtRegsNames[] = {
#define SIGVISOR_PT_REGS_NAME(name) #name,
    SIGVISOR_WB_PT_REGS_FIELDS(SIGVISOR_PT_REGS_NAME)
#undef SIGVISOR_PT_REGS_NAME
};

absl::Status Decline(std::string why) { return absl::FailedPreconditionError(std::move(why)); }

// Adds [offset, offset + length) to `ranges`, merged with the last range if they touch.
void AddRange(std::vector<FrameRange>& ranges, size_t offset, size_t length) {
  if (!ranges.empty() && ranges.back().offset + ranges.back().length == offset) {
    ranges.back().length += length;
    return;
  }
  ranges.push_back({offset, length});
}

}  // namespace

absl::StatusOr<SignalFramePlan> PlanSignalFrame(const SignalFrameRequest& request,
                                                const PtRegs& user) {
  if (request.signo < 1 || static_cast<uint64_t>(request.signo) > kTopSignal) {
    return Decline("a signal number outside 1..64");
  }
  if (request.info.size() > kSiginfoBytes) {
    return Decline("a siginfo longer than the frame's");
  }
  // As the kernel: below the red zone, then aligned as after a call.
  uint64_t sp = user.rsp - white_box::kSignalRedzone - sizeof(LinuxRtSigframe);
  sp = (sp & ~uint64_t{15}) - 8;
  if (!UserRangeOk(sp, sizeof(LinuxRtSigframe))) {
    return Decline("a frame outside the user range");
  }
  if (!(request.action_flags & kSaRestorer)) return Decline("an action without SA_RESTORER");

  SignalFramePlan plan;
  plan.address = sp;
  LinuxRtSigframe& f = plan.frame;
  f.pretcode = request.restorer;
  f.uc.uc_flags = 0;
  f.uc.uc_link = 0;
  f.uc.uc_stack.ss_sp = 0;
  f.uc.uc_stack.ss_flags = kSsDisable;
  f.uc.uc_stack.ss_size = 0;
  LinuxSigcontext& sc = f.uc.uc_mcontext;
  sc.r8 = user.r8;
  sc.r9 = user.r9;
  sc.r10 = user.r10;
  sc.r11 = user.r11;
  sc.r12 = user.r12;
  sc.r13 = user.r13;
  sc.r14 = user.r14;
  sc.r15 = user.r15;
  sc.rdi = user.rdi;
  sc.rsi = user.rsi;
  sc.rbp = user.rbp;
  sc.rbx = user.rbx;
  sc.rdx = user.rdx;
  sc.rax = user.rax;
  sc.rcx = user.rcx;
  sc.rsp = user.rsp;
  sc.rip = user.rip;
  sc.eflags = user.rflags;
  sc.cs = static_cast<uint16_t>(user.cs);
  sc.gs = 0;
  sc.fs = 0;
  sc.ss = static_cast<uint16_t>(user.ss);
  sc.err = user.error_code;
  sc.trapno = user.vector;
  sc.oldmask = request.saved_mask;
  sc.cr2 = request.fault_address;
  sc.fpstate = 0;
  f.uc.uc_sigmask = request.saved_mask;
  for (const FrameField& field : kFrameFields) {
    if (field.written) AddRange(plan.written, field.span.offset, field.span.size);
  }
  if (request.action_flags & kSaSiginfo) {
    std::memcpy(f.info, request.info.data(), request.info.size());
    AddRange(plan.written, offsetof(LinuxRtSigframe, info), request.info.size());
  }
  plan.extent = plan.written.back().offset + plan.written.back().length;

  PtRegs& regs = plan.regs;
  regs = user;
  regs.rdi = static_cast<uint64_t>(static_cast<int64_t>(request.signo));
  regs.rsi = sp + offsetof(LinuxRtSigframe, info);
  regs.rdx = sp + offsetof(LinuxRtSigframe, uc);
  regs.rax = 0;
  regs.rsp = sp;
  regs.rip = request.handler;
  regs.rflags &= ~white_box::kSignalHandlerClearsEflags;
  return plan;
}

absl::StatusOr<uint64_t> SigreturnFrameAddress(const PtRegs& at_entry) {
  const uint64_t frame = at_entry.rsp - 8;
  if (!UserRangeOk(frame, sizeof(LinuxRtSigframe))) {
    return Decline("a frame outside the user range");
  }
  return frame;
}

SigreturnPlan PlanSigreturn(const PtRegs& at_entry, const LinuxUcontext& uc) {
  SigreturnPlan plan;
  plan.mask = uc.uc_sigmask;
  PtRegs& regs = plan.regs;
  regs = at_entry;
  const LinuxSigcontext& sc = uc.uc_mcontext;
  regs.r8 = sc.r8;
  regs.r9 = sc.r9;
  regs.r10 = sc.r10;
  regs.r11 = sc.r11;
  regs.r12 = sc.r12;
  regs.r13 = sc.r13;
  regs.r14 = sc.r14;
  regs.r15 = sc.r15;
  regs.rdi = sc.rdi;
  regs.rsi = sc.rsi;
  regs.rbp = sc.rbp;
  regs.rbx = sc.rbx;
  regs.rdx = sc.rdx;
  regs.rax = sc.rax;
  regs.rcx = sc.rcx;
  regs.rsp = sc.rsp;
  regs.rip = sc.rip;
  regs.rflags =
      (at_entry.rflags & ~white_box::kSignalFixEflags) | (sc.eflags & white_box::kSignalFixEflags);
  return plan;
}

std::string FrameFieldName(size_t offset) {
  for (const FrameField& field : kFrameFields) {
    if (offset >= field.span.offset && offset < field.span.offset + field.span.size) {
      if (offset == field.span.offset) return std::string(field.span.name);
      return absl::StrFormat("%s+%d", field.span.name, offset - field.span.offset);
    }
  }
  if (offset >= offsetof(LinuxRtSigframe, info) && offset < sizeof(LinuxRtSigframe)) {
    return absl::StrFormat("info+%d", offset - offsetof(LinuxRtSigframe, info));
  }
  return absl::StrFormat("+%d", offset);
}

std::span<const std::string_view> PtRegsFieldNames() { return kPtRegsNames; }

uint64_t PtRegsField(const PtRegs& regs, size_t index) {
  uint64_t value = 0;
  if (index < std::size(kPtRegsNames)) {
    std::memcpy(&value, reinterpret_cast<const uint8_t*>(&regs) + index * sizeof(uint64_t),
                sizeof(value));
  }
  return value;
}

}  // namespace sigvisor::x86
