// Linux x86-64's rt signal frame, as a handler finds it on its stack: the restorer's
// address, the ucontext (with the saved registers and mask) and the siginfo. This is
// the user ABI the bundled kernel keeps (guest-kit/uapi/arch/x86_64/asm/sigcontext.h,
// and struct rt_sigframe in arch/x86_64/guest/signal.c); the VMM writes it for a
// signal=pv kernel. The guest's headers cannot be included here: their names are
// glibc's (stack_t, struct sigcontext, si_pid), so the layout is restated, pinned by
// the offsets below and by the byte-for-byte comparison with the kernel's own frames
// (run --check-signal-frames, tests/pv_signal_test.cc).
#ifndef SIGVISOR_ARCH_X86_64_VMM_SIGNAL_RT_SIGFRAME_H_
#define SIGVISOR_ARCH_X86_64_VMM_SIGNAL_RT_SIGFRAME_H_

#include <cstddef>
#include <cstdint>

namespace sigvisor::x86 {

struct LinuxSigcontext {
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
  uint16_t cs, gs, fs, ss;
  uint64_t err, trapno, oldmask, cr2;
  uint64_t fpstate;  // 0: no FPU state saved
  uint64_t reserved1[8];
};

struct LinuxStack {
  uint64_t ss_sp;
  int32_t ss_flags;
  int32_t pad;
  uint64_t ss_size;
};

struct LinuxUcontext {
  uint64_t uc_flags;
  uint64_t uc_link;
  LinuxStack uc_stack;
  LinuxSigcontext uc_mcontext;
  uint64_t uc_sigmask;
};

inline constexpr size_t kSiginfoBytes = 128;

struct LinuxRtSigframe {
  uint64_t pretcode;
  LinuxUcontext uc;
  uint8_t info[kSiginfoBytes];
};

static_assert(sizeof(LinuxSigcontext) == 256);
static_assert(offsetof(LinuxUcontext, uc_mcontext) == 40);
static_assert(offsetof(LinuxUcontext, uc_sigmask) == 296);
static_assert(offsetof(LinuxRtSigframe, uc) == 8);
static_assert(offsetof(LinuxRtSigframe, info) == 312);
static_assert(sizeof(LinuxRtSigframe) == 440);

// Linux's flag values the frame code reads (uapi asm/signal.h).
inline constexpr uint64_t kSaSiginfo = 0x00000004;
inline constexpr uint64_t kSaRestorer = 0x04000000;
inline constexpr int32_t kSsDisable = 2;

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_SIGNAL_RT_SIGFRAME_H_
