/*
 * white_box.h: what the host reads of the x86-64 guest kernel's insides.
 *
 * sigvisor_abi.h is the contract the guest signs up to (hypercalls, boot info). This
 * header is the other one, which the guest never calls: the VMM and its reports look
 * into the bundled kernel by name and by layout. The fault injector breaks on a
 * function and reads a saved register out of its struct pt_regs and walks the
 * exception table; the trap engine tells a pv build by a symbol; the trace analysis
 * and the studies find the stages of signal delivery by function name. Renaming one
 * of these functions or reordering pt_regs would otherwise fail quietly (an injector
 * that never fires, a profile with no stages), so the names live here, the guest's
 * pt_regs checks its offsets against this header at compile time, and a test
 * (vmm/app/images:white_box_test) checks that every embedded x86-64 image defines every
 * name. The MIPS kernel has no such contract: its host reads no symbol.
 *
 * Included by the guest kernel (freestanding C) and by the host (C++).
 */
#ifndef SIGVISOR_GUEST_KIT_ABI_WHITE_BOX_H_
#define SIGVISOR_GUEST_KIT_ABI_WHITE_BOX_H_

/* ---- Functions the host finds by ELF symbol (out of line in every build) ---------- */

/* Every system call passes through it with its struct pt_regs in rdi: the injector's
 * breakpoint for per-operation injection. */
#define SIGVISOR_WB_SYSCALL_DISPATCH "syscall_dispatch"

/* Only in debugreg=pv builds, which write their debug registers into the VMM's page:
 * its presence is how --trap=pv tells such a build from one that traps. */
#define SIGVISOR_WB_PV_SET_DEBUGREG "pv_set_debugreg"

/* ---- The exception table's bounds (linker symbols, every build) ----------------------
 * The kernel's user-access sites, where the page injector aims (`sigvisor sites
 * --uaccess`): 16-byte entries of (faulting instruction, fixup). */
#define SIGVISOR_WB_EX_TABLE_START "__start___ex_table"
#define SIGVISOR_WB_EX_TABLE_STOP "__stop___ex_table"

/* ---- Functions the host finds by name in a trace -----------------------------------
 * Out of line (an ELF symbol) or inlined (a DW_TAG_inlined_subroutine of the image's
 * DWARF): a trace names both. */

/* The signal path: exit_to_user_mode -> get_signal (dequeue) -> handle_signal (frame
 * setup) -> setup_rt_frame; sys_rt_sigreturn returns from the handler. */
#define SIGVISOR_WB_EXIT_TO_USER_MODE "exit_to_user_mode"
#define SIGVISOR_WB_GET_SIGNAL "get_signal"
#define SIGVISOR_WB_HANDLE_SIGNAL "handle_signal"
#define SIGVISOR_WB_SETUP_RT_FRAME "setup_rt_frame"
#define SIGVISOR_WB_SYS_RT_SIGRETURN "sys_rt_sigreturn"
/* The lazy DR7 write on delivery (seed 000). */
#define SIGVISOR_WB_SET_DEBUGREG7 "set_debugreg7"
/* Where signals are generated: a user exception, a fault, kill(2). */
#define SIGVISOR_WB_USER_EXCEPTION "user_exception"
#define SIGVISOR_WB_FORCE_SIG_FAULT "force_sig_fault"
#define SIGVISOR_WB_SEND_SIGNAL "send_signal"
#define SIGVISOR_WB_SYS_KILL "sys_kill"

/* ---- struct pt_regs (arch/x86_64/guest/pt_regs.h), as the host reads it ------------
 * The register frame every kernel entry saves, field by field in the order entry.S
 * pushes it (Linux's layout): the kernel's struct is made from this list, and the
 * signal=pv frame builder reads and writes the user registers through it. */
#define SIGVISOR_WB_PT_REGS_FIELDS(X)                                                  \
  X(r15) X(r14) X(r13) X(r12) X(rbp) X(rbx) X(r11) X(r10) X(r9) X(r8) X(rax) X(rcx) \
  X(rdx) X(rsi) X(rdi)                                                                 \
  X(vector)     /* pushed by the entry stub */                                         \
  X(error_code) /* pushed by the CPU, or 0 by the stub */                              \
  X(rip) X(cs) X(rflags) X(rsp) X(ss) /* the hardware interrupt frame */

#define SIGVISOR_WB_PT_REGS_RAX 80 /* the system call number at syscall_dispatch */

/* ---- The user address range (arch/x86_64/guest/uaccess.h's access_ok) -----------------
 * Where user memory may be: [USER_BASE, USER_TOP). The signal=pv frame builder
 * checks a frame against it as access_ok does. */
#define SIGVISOR_WB_USER_BASE 0x40000000ull
#define SIGVISOR_WB_USER_TOP 0x80000000ull

/* ---- The signal frame's policy (arch/x86_64/guest/signal.c) ---------------------------
 * Below the user rsp a frame leaves the red zone; sigreturn restores only these flags
 * (Linux's FIX_EFLAGS: AC OF DF TF SF ZF AF PF CF RF), and delivery clears TF and DF. */
#define SIGVISOR_WB_SIGNAL_REDZONE 128
#define SIGVISOR_WB_SIGNAL_FIX_EFLAGS 0x40dd5ull
#define SIGVISOR_WB_SIGNAL_HANDLER_CLEARS_EFLAGS 0x500ull /* TF | DF */

#ifdef __cplusplus
#include <cstdint>
#include <string_view>

namespace sigvisor::white_box {

inline constexpr std::string_view kSyscallDispatch = SIGVISOR_WB_SYSCALL_DISPATCH;
inline constexpr std::string_view kPvSetDebugreg = SIGVISOR_WB_PV_SET_DEBUGREG;
inline constexpr std::string_view kExTableStart = SIGVISOR_WB_EX_TABLE_START;
inline constexpr std::string_view kExTableStop = SIGVISOR_WB_EX_TABLE_STOP;
inline constexpr std::string_view kExitToUserMode = SIGVISOR_WB_EXIT_TO_USER_MODE;
inline constexpr std::string_view kGetSignal = SIGVISOR_WB_GET_SIGNAL;
inline constexpr std::string_view kHandleSignal = SIGVISOR_WB_HANDLE_SIGNAL;
inline constexpr std::string_view kSetupRtFrame = SIGVISOR_WB_SETUP_RT_FRAME;
inline constexpr std::string_view kSysRtSigreturn = SIGVISOR_WB_SYS_RT_SIGRETURN;
inline constexpr std::string_view kSetDebugreg7 = SIGVISOR_WB_SET_DEBUGREG7;
inline constexpr std::string_view kUserException = SIGVISOR_WB_USER_EXCEPTION;
inline constexpr std::string_view kForceSigFault = SIGVISOR_WB_FORCE_SIG_FAULT;
inline constexpr std::string_view kSendSignal = SIGVISOR_WB_SEND_SIGNAL;
inline constexpr std::string_view kSysKill = SIGVISOR_WB_SYS_KILL;

inline constexpr uint64_t kPtRegsRax = SIGVISOR_WB_PT_REGS_RAX;

// The kernel's struct pt_regs, as the list above lays it out.
struct PtRegs {
#define SIGVISOR_WB_PT_REGS_FIELD(name) uint64_t name;
  SIGVISOR_WB_PT_REGS_FIELDS(SIGVISOR_WB_PT_REGS_FIELD)
#undef SIGVISOR_WB_PT_REGS_FIELD
};
static_assert(sizeof(PtRegs) == 22 * 8);

inline constexpr uint64_t kUserBase = SIGVISOR_WB_USER_BASE;
inline constexpr uint64_t kUserTop = SIGVISOR_WB_USER_TOP;
inline constexpr uint64_t kSignalRedzone = SIGVISOR_WB_SIGNAL_REDZONE;
inline constexpr uint64_t kSignalFixEflags = SIGVISOR_WB_SIGNAL_FIX_EFLAGS;
inline constexpr uint64_t kSignalHandlerClearsEflags = SIGVISOR_WB_SIGNAL_HANDLER_CLEARS_EFLAGS;

// Every name above, for the test that each image defines them. `out_of_line`: it
// must be an ELF symbol (the host sets a breakpoint on it).
struct ContractFunction {
  std::string_view name;
  bool out_of_line;
};
inline constexpr ContractFunction kFunctions[] = {
    {kSyscallDispatch, true}, {kExitToUserMode, false}, {kGetSignal, false},
    {kHandleSignal, false},   {kSetupRtFrame, false},   {kSysRtSigreturn, false},
    {kSetDebugreg7, false},   {kUserException, false},  {kForceSigFault, false},
    {kSendSignal, false},     {kSysKill, false},
};

}  // namespace sigvisor::white_box
#endif /* __cplusplus */

#endif /* SIGVISOR_GUEST_KIT_ABI_WHITE_BOX_H_ */
