// Completes SYSCALL where the host does not: on a PVM host, SYSCALL from CPL3 jumps to
// LSTAR with RCX and R11 set as architected but without raising privilege
// (docs/host-notes.md). A kernel that maps its text supervisor-only, as Linux does,
// then faults fetching its own entry point at CPL3: a #PF with RIP = CR2 = LSTAR,
// delivered through the IDT at (emulated) CPL0. The VMM cannot see the SYSCALL
// itself (no exit), but it can see that #PF arrive: an execution breakpoint on the
// kernel's page-fault entry fires at CPL0 on this host. There this interceptor reads
// the exception frame, and when it is that fault, puts the vCPU where SYSCALL would
// have put it: at LSTAR, CPL0 (CS and SS from STAR), RFLAGS masked by SFMASK, the
// user's RSP, RCX and R11 as the host left them. The exception frame on the kernel
// stack is abandoned unread, as if never pushed; CR2 keeps the fault's address, which
// no kernel reads outside its page-fault handler.
//
// Every other page fault runs on: the breakpoint is lifted for one single step of the
// entry's first instruction and put back. The kernel's IDT changes during boot (Linux
// moves its #PF gate from the early handler to the final one), so the breakpoint
// follows gate 14 at every exit until the first SYSCALL is completed; by then the
// kernel has run user code and its IDT is final. Where the host runs CPL0 directly,
// SYSCALL works and this interceptor is not installed.
//
// The cost is visible, not hidden: each completion and each step over an ordinary page
// fault is a VM exit the ledger counts ("SYSCALL completed at CPL0", "page-fault entry
// stepped"), so a Linux phase on this host shows one exit per system call.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_SYSCALL_COMPLETION_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_SYSCALL_COMPLETION_H_

#include <linux/kvm.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "arch/x86_64/vmm/cpu/vcpu_state.h"
#include "vmm/run/exit_interceptor.h"

namespace sigvisor::x86 {

// The frame a 64-bit exception with an error code pushes, lowest address first.
struct ExceptionFrame {
  uint64_t error_code = 0;
  uint64_t rip = 0;
  uint64_t cs = 0;
  uint64_t rflags = 0;
  uint64_t rsp = 0;
  uint64_t ss = 0;
};

// The SYSCALL MSRs as the guest kernel set them.
struct SyscallMsrs {
  uint64_t star = 0;
  uint64_t lstar = 0;
  uint64_t fmask = 0;
};

// Whether `frame` is the page fault of a SYSCALL left at CPL3: user mode, an
// instruction fetch by user code, at LSTAR.
bool IsStrandedSyscall(const ExceptionFrame& frame, uint64_t cr2, const SyscallMsrs& msrs);

// The state SYSCALL enters the kernel with, from the fault's frame: RIP = LSTAR, RSP
// the user's, RFLAGS the frame's masked by SFMASK (RF cleared too), CS = STAR[47:32]
// and SS = that + 8, both flat at DPL 0. The other registers are left as they are.
void EnterSyscall(const ExceptionFrame& frame, const SyscallMsrs& msrs, kvm_regs& regs,
                  kvm_sregs& sregs);

class SyscallCompletion : public ExitInterceptor {
 public:
  // `cpu` must outlive the interceptor.
  explicit SyscallCompletion(VcpuState& cpu) : cpu_(cpu) {}

  Interception Intercept(const VmExit& exit) override;
  void Observe(const ObservedExit& exit) override;
  std::vector<std::string> Warnings() override;

  // Places the breakpoint before the vCPU first runs where the kernel has already set
  // LSTAR and its IDT: a VM restored past its boot, whose first SYSCALL may come before
  // any exit would place it. A booting kernel has not (LSTAR is 0): its exits place it.
  void Arm();

  uint64_t completed() const { return completed_; }

 private:
  // Puts the breakpoint on gate 14's handler once the kernel has set LSTAR (before
  // that there is no user mode to come from), and moves it when the gate changes.
  absl::Status FollowPageFaultGate();
  Interception OnBreakpoint();

  VcpuState& cpu_;
  std::optional<uint64_t> armed_;  // the page-fault entry the breakpoint is on
  bool stepping_ = false;          // over that entry's first instruction, unarmed
  bool settled_ = false;           // a SYSCALL was completed: the IDT is final
  std::string failure_;            // why the breakpoint could not be placed, once
  uint64_t completed_ = 0;
  uint64_t stepped_ = 0;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_SYSCALL_COMPLETION_H_
