// The stages of one signal, by name: what a trace's op is cut into, for the bundled
// kernel (analysis.cc, from its white-box function names) and for Linux
// (linux_stages.h, from a table of Linux's functions). One list for both, so that a
// stage of the model and Linux's stage of the same name are the same step of the
// signal path and a side-by-side diff can set them on one row. Stages that only Linux
// has (the LSM hook, ucounts, the FPU frame, the exit-to-user work loop, the die
// notifiers) are in the list too: the model's column is 0 there.
#ifndef SIGVISOR_VMM_TRACE_STAGES_H_
#define SIGVISOR_VMM_TRACE_STAGES_H_

#include <cstddef>
#include <iterator>
#include <string_view>

namespace sigvisor::trace::stage {

// User code, opaque (the host runs it unstepped): before the signal, and the handler.
inline constexpr std::string_view kUserCode = "user code (CPL3, opaque)";
inline constexpr std::string_view kHandler = "handler (CPL3, opaque)";
// The way into the kernel: an exception's or a system call's entry (the signal's
// cause), any other entry, and an exception the kernel takes itself on the way.
inline constexpr std::string_view kExceptionEntry = "exception entry";
inline constexpr std::string_view kSyscallEntry = "syscall entry";
inline constexpr std::string_view kKernelEntry = "kernel entry";
inline constexpr std::string_view kKernelException = "exception in the kernel";
// Linux: the die notifier chain every trap runs (kprobes, uprobes, hw_breakpoint).
inline constexpr std::string_view kDieNotifiers = "die notifiers";
inline constexpr std::string_view kSignalGeneration = "signal generation";
// Linux: the LSM hook kill() calls (security_task_kill: AppArmor's on Debian, and the
// BPF LSM's).
inline constexpr std::string_view kLsmHook = "LSM hook (AppArmor)";
// Linux: the per-user pending-signal count (RLIMIT_SIGPENDING) a sigqueue charges.
inline constexpr std::string_view kUcounts = "ucounts";
inline constexpr std::string_view kDequeue = "dequeue";
inline constexpr std::string_view kDr7Write = "DR7 write";
inline constexpr std::string_view kFrameSetup = "frame setup";
// Linux: the FPU/XSAVE state written to the frame, and read back at sigreturn.
inline constexpr std::string_view kFpuFrame = "FPU frame";
// Linux: exit_to_user_mode_prepare's loop over the task's work flags (and what it
// does on the way out, the I/O bitmap among it).
inline constexpr std::string_view kExitToUserWork = "exit-to-user work";
inline constexpr std::string_view kReturnToHandler = "return to the handler";
inline constexpr std::string_view kSigreturnEntry = "sigreturn entry";
inline constexpr std::string_view kSysRtSigreturn = "sys_rt_sigreturn";
inline constexpr std::string_view kFpuFrameRestore = "FPU frame restore";
inline constexpr std::string_view kSigreturnExit = "sigreturn exit";
inline constexpr std::string_view kReturnToUser = "return to user";

// Every stage above, in the order one signal passes them.
inline constexpr std::string_view kOrder[] = {
    kUserCode,     kExceptionEntry,   kSyscallEntry,   kKernelEntry,     kKernelException,
    kDieNotifiers, kSignalGeneration, kLsmHook,        kUcounts,         kDequeue,
    kDr7Write,     kFrameSetup,       kFpuFrame,       kExitToUserWork,  kReturnToHandler,
    kHandler,      kSigreturnEntry,   kSysRtSigreturn, kFpuFrameRestore, kSigreturnExit,
    kReturnToUser,
};

// A stage's place in kOrder; one past its end for a name not in it.
constexpr size_t Rank(std::string_view name) {
  size_t i = 0;
  while (i < std::size(kOrder) && kOrder[i] != name) ++i;
  return i;
}

}  // namespace sigvisor::trace::stage

#endif  // SIGVISOR_VMM_TRACE_STAGES_H_
