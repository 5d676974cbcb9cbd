// Linux's stages of one signal: a table of Linux's functions, each mapped onto a stage
// of the bundled kernel's signal path (stages.h) or onto one Linux alone has (the die
// notifiers, the LSM hook, ucounts, the FPU frame, the exit-to-user work loop). The
// table is data: to follow another kernel version, change its rows, not code.
//
// An instruction takes the stage of the innermost function on its call path that a
// row names (a row's name may be a prefix: `asm_exc_` names every exception's entry
// stub), so a helper (a lock, a copy, kmem_cache_alloc) counts with the step that
// called it. Two rows are not stages but sides of a span: the entry path (asm_exc_*,
// entry_SYSCALL_64, do_syscall_64, ...) and the exit path (irqentry_exit*,
// syscall_exit_to_user_mode, the iretq). They are named for what the span does, as the
// bundled kernel's are: an exception's or a system call's entry, the sigreturn's entry,
// the return to the handler, the sigreturn's exit, or a plain return to user. Code on
// no row's path takes its side from where it runs: the entry's until the span has
// reached its exit path, the exit's after.
//
// The rows are Debian's 6.1 (x86-64) names. Aliases at one address take the first name
// kallsyms gives, so some rows name both (`__ia32_sys_rt_sigreturn` for
// `__x64_sys_rt_sigreturn`; `__irqentry_text_end` for the start of
// `swapgs_restore_regs_and_return_to_usermode`).
#ifndef SIGVISOR_VMM_TRACE_LINUX_STAGES_H_
#define SIGVISOR_VMM_TRACE_LINUX_STAGES_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vmm/trace/trace.h"

namespace sigvisor::trace {

// The two sides of a kernel span, for LinuxStageRule::stage.
inline constexpr std::string_view kEntryPath = "(entry path)";
inline constexpr std::string_view kExitPath = "(exit path)";

struct LinuxStageRule {
  std::string_view function;  // a function's name; with `prefix`, the start of names
  bool prefix = false;
  std::string_view stage;  // a stage of stages.h, kEntryPath or kExitPath
};

// The table, in no particular order (the innermost function decides, not the row).
std::span<const LinuxStageRule> LinuxStageTable();

// The row that names `function`, or null.
const LinuxStageRule* LinuxStageRuleFor(std::string_view function);

// One kernel span (the kernel's instructions between two stretches of user code) cut
// into stages.
struct KernelSpanStages {
  std::vector<std::string> labels;  // one per entry of the span
  // The stage of the span's way in, where the host's count of the user code just left
  // (PVM: its `int $0x80`) belongs.
  std::string entry_label;
  bool delivers = false;  // sets up a signal's frame: the user code after it is the handler
};

// Linux's stages of entries [begin, end) of `trace`, all of them kernel instructions.
// `left_user_by`: how the user code before the span was left ("syscall (kill)", "#DE").
KernelSpanStages LinuxKernelSpanStages(const Trace& trace, size_t begin, size_t end,
                                       std::string_view left_user_by);

}  // namespace sigvisor::trace

#endif  // SIGVISOR_VMM_TRACE_LINUX_STAGES_H_
