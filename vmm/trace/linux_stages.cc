#include "vmm/trace/linux_stages.h"

#include <string>

#include "vmm/trace/analysis.h"
#include "vmm/trace/stages.h"

namespace sigvisor::trace {
namespace {

using namespace stage;  // NOLINT: the table reads as stage names

constexpr bool kPrefix = true;

// Debian 6.1's signal path, x86-64. Only the functions that open a step are here:
// everything they call counts with them unless a row names it too.
constexpr LinuxStageRule kLinuxStages[] = {
    // The way in: an exception's entry stub and its C entry, or SYSCALL's.
    {"asm_exc_", kPrefix, kEntryPath},
    {"error_entry", false, kEntryPath},
    {"sync_regs", false, kEntryPath},
    {"irqentry_enter", kPrefix, kEntryPath},
    {"entry_SYSCALL_64", kPrefix, kEntryPath},
    {"do_syscall_64", false, kEntryPath},
    {"syscall_enter_from_user_mode", kPrefix, kEntryPath},
    {"x64_sys_call", false, kEntryPath},
    // The way out, to the iretq or sysretq.
    {"irqentry_exit", kPrefix, kExitPath},
    {"syscall_exit_to_user_mode", kPrefix, kExitPath},
    {"error_return", false, kExitPath},
    {"swapgs_restore_regs_and_return_to_usermode", false, kExitPath},
    {"__irqentry_text_end", false, kExitPath},
    {"native_irq_return_iret", false, kExitPath},
    {"syscall_return_via_sysret", false, kExitPath},
    {"entry_SYSRETQ_", kPrefix, kExitPath},
    {"exit_to_user_mode_prepare", false, kExitToUserWork},
    {"exit_to_user_mode_loop", false, kExitToUserWork},
    // The trap's C handler deciding on the signal, and the die notifier chain it runs.
    {"exc_", kPrefix, kSignalGeneration},
    {"notify_die", false, kDieNotifiers},
    // Sending: force_sig_fault from a trap, kill() from a process.
    {"force_sig", kPrefix, kSignalGeneration},
    {"__x64_sys_kill", false, kSignalGeneration},
    {"__ia32_sys_kill", false, kSignalGeneration},
    {"__x64_sys_tgkill", false, kSignalGeneration},
    {"__x64_sys_tkill", false, kSignalGeneration},
    {"kill_something_info", false, kSignalGeneration},
    {"kill_pid_info", false, kSignalGeneration},
    {"group_send_sig_info", false, kSignalGeneration},
    {"do_send_sig_info", false, kSignalGeneration},
    {"send_signal_locked", false, kSignalGeneration},
    {"__send_signal_locked", false, kSignalGeneration},
    {"security_task_kill", false, kLsmHook},
    {"apparmor_", kPrefix, kLsmHook},
    {"inc_rlimit_get_ucounts", false, kUcounts},
    {"dec_rlimit_put_ucounts", false, kUcounts},
    {"do_dec_rlimit_put_ucounts", false, kUcounts},
    {"put_ucounts", false, kUcounts},
    // Delivering: dequeue in get_signal, then handle_signal and the frame (inlined into
    // arch_do_signal_or_restart), with the FPU state's part of it.
    {"get_signal", false, kDequeue},
    {"dequeue_signal", false, kDequeue},
    {"arch_do_signal_or_restart", false, kFrameSetup},
    {"get_sigframe", kPrefix, kFrameSetup},
    {"copy_siginfo_to_user", false, kFrameSetup},
    {"signal_setup_done", false, kFrameSetup},
    {"copy_fpstate_to_sigframe", false, kFpuFrame},
    {"fpu__alloc_mathframe", false, kFpuFrame},
    {"fpu__clear_user_states", false, kFpuFrame},
    // Sigreturn.
    {"__x64_sys_rt_sigreturn", false, kSysRtSigreturn},
    {"__ia32_sys_rt_sigreturn", false, kSysRtSigreturn},
    {"fpu__restore_sig", false, kFpuFrameRestore},
};

bool Names(const LinuxStageRule& rule, std::string_view function) {
  return rule.prefix ? function.starts_with(rule.function) : function == rule.function;
}

}  // namespace

std::span<const LinuxStageRule> LinuxStageTable() { return kLinuxStages; }

const LinuxStageRule* LinuxStageRuleFor(std::string_view function) {
  // An exact row wins over a prefix (exit_to_user_mode_prepare is not an entry path).
  const LinuxStageRule* by_prefix = nullptr;
  for (const LinuxStageRule& rule : kLinuxStages) {
    if (!Names(rule, function)) continue;
    if (!rule.prefix) return &rule;
    if (by_prefix == nullptr || rule.function.size() > by_prefix->function.size())
      by_prefix = &rule;
  }
  return by_prefix;
}

KernelSpanStages LinuxKernelSpanStages(const Trace& trace, size_t begin, size_t end,
                                       std::string_view left_user_by) {
  KernelSpanStages span;
  // Each entry's stage by the table, or the side of the span it is on.
  std::vector<std::string_view> raw;
  raw.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) {
    const Entry& e = trace.entries[i];
    if (e.debug_control_write) {
      raw.push_back(kDr7Write);
      continue;
    }
    const std::vector<std::string> frames = Frames(e);
    std::string_view stage = kEntryPath;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      if (const LinuxStageRule* rule = LinuxStageRuleFor(*it); rule != nullptr) {
        stage = rule->stage;
        break;
      }
    }
    // Under the tracer's mark of an exception taken in the kernel ("[#PF]"): that
    // exception's handling, whichever functions it runs.
    for (const std::string& frame : frames) {
      if (frame.starts_with("[")) stage = kKernelException;
    }
    raw.push_back(stage);
    span.delivers = span.delivers || stage == kFrameSetup;
  }
  bool sigreturn = false;
  for (std::string_view s : raw) sigreturn = sigreturn || s == kSysRtSigreturn;

  std::string_view entry = kKernelEntry, exit = kReturnToUser;
  if (sigreturn) {
    entry = kSigreturnEntry;
    exit = kSigreturnExit;
  } else if (span.delivers) {
    const bool by_syscall = left_user_by.find("syscall") != std::string_view::npos ||
                            left_user_by.find("int $0x80") != std::string_view::npos;
    entry = by_syscall ? kSyscallEntry : kExceptionEntry;
    exit = kReturnToHandler;
  }
  span.entry_label = std::string(entry);
  bool on_the_way_out = false;
  span.labels.reserve(raw.size());
  for (std::string_view s : raw) {
    if (s == kExitPath) on_the_way_out = true;
    if (s == kEntryPath || s == kExitPath) s = on_the_way_out ? exit : entry;
    span.labels.emplace_back(s);
  }
  return span;
}

}  // namespace sigvisor::trace
