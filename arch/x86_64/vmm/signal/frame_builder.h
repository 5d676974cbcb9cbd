// What the bundled kernel's frame code does for one signal and one rt_sigreturn
// (arch/x86_64/guest/signal.c: setup_rt_frame, restore_sigcontext), computed on the
// host: the frame's address and bytes, which of them the kernel writes, and the
// registers the handler (or the interrupted code) resumes with. Pure functions of
// their inputs, so that the signal=pv hypercalls (pv_signal.h) and their tests and
// fuzzer share them; guest memory is pv_signal.cc's business.
//
// The policy is the kernel's, restated where it must be: the red zone, the 16-byte
// alignment "as after a call", access_ok's user range, FIX_EFLAGS and the flags the
// handler starts without come from white_box.h, which the kernel compiles too.
#ifndef SIGVISOR_ARCH_X86_64_VMM_SIGNAL_FRAME_BUILDER_H_
#define SIGVISOR_ARCH_X86_64_VMM_SIGNAL_FRAME_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/signal/rt_sigframe.h"
#include "guest-kit/abi/white_box.h"

namespace sigvisor::x86 {

using PtRegs = white_box::PtRegs;

// One signal to deliver, as the kernel hands it over (sigvisor_hc_signal_frame).
struct SignalFrameRequest {
  int32_t signo = 0;
  uint64_t handler = 0;
  uint64_t restorer = 0;
  uint64_t action_flags = 0;
  uint64_t saved_mask = 0;
  uint64_t fault_address = 0;
  std::span<const uint8_t> info;  // the siginfo bytes the kernel copies (at most 128)
};

// A byte range of the frame the kernel writes.
struct FrameRange {
  size_t offset = 0;
  size_t length = 0;
};

struct SignalFramePlan {
  uint64_t address = 0;             // the frame's user address (where pretcode goes)
  LinuxRtSigframe frame{};          // its contents, meaningful where `written` says
  std::vector<FrameRange> written;  // in frame order, not overlapping
  size_t extent = 0;                // the end of the last range: [address, + extent) is touched
  PtRegs regs{};                    // the registers the handler starts with
};

// The kernel's setup_rt_frame for `request` and the task's user registers. An error
// (FailedPrecondition) where the kernel's own path would fail or could decide
// otherwise: the frame outside the user range, no SA_RESTORER, a siginfo longer than
// the frame's or a signal number outside 1..64. The message says which in a few
// fixed words (the run reports declines counted by message).
absl::StatusOr<SignalFramePlan> PlanSignalFrame(const SignalFrameRequest& request,
                                                const PtRegs& user);

// rt_sigreturn: where the handler's frame is (8 bytes below the user rsp: the
// handler's `ret` popped pretcode), refused as the kernel's access_ok refuses it.
absl::StatusOr<uint64_t> SigreturnFrameAddress(const PtRegs& at_entry);

// The part of the frame rt_sigreturn reads: uc.uc_mcontext up to the end of
// uc.uc_sigmask (the kernel reads the mask and the saved registers, nothing else).
inline constexpr size_t kSigreturnReadOffset =
    offsetof(LinuxRtSigframe, uc) + offsetof(LinuxUcontext, uc_mcontext);
inline constexpr size_t kSigreturnReadEnd =
    offsetof(LinuxRtSigframe, uc) + offsetof(LinuxUcontext, uc_sigmask) + sizeof(uint64_t);

struct SigreturnPlan {
  PtRegs regs{};      // the registers the interrupted code resumes with
  uint64_t mask = 0;  // the frame's uc_sigmask, for the kernel to set
};

// The kernel's restore_sigcontext: `at_entry` with the saved registers put back and
// the flags through FIX_EFLAGS.
SigreturnPlan PlanSigreturn(const PtRegs& at_entry, const LinuxUcontext& uc);

// The frame field at byte `offset` ("uc.uc_mcontext.rip", "info+12"), for reports.
std::string FrameFieldName(size_t offset);

// pt_regs's field names in order, and a field by index, for comparisons.
std::span<const std::string_view> PtRegsFieldNames();
uint64_t PtRegsField(const PtRegs& regs, size_t index);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_SIGNAL_FRAME_BUILDER_H_
