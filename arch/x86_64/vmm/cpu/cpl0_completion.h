// Completes at CPL0 what a host that emulates guest CPL0 (PVM) cannot: KVM's
// instruction emulator gives up on some instructions that a CPU runs, and reports
// KVM_EXIT_INTERNAL_ERROR (emulation). For those whose architectural effect the VMM
// can produce exactly, this interceptor produces it and the guest goes on as it would
// on hardware KVM, where CPL0 runs directly:
//
//   int3 (0xCC): #BP delivered through the guest's IDT with RIP past the int3, as the
//   CPU delivers it (a trap). Linux's boot-time int3 self-test and its text patching
//   (text_poke_bp) rely on it.
//   fwait (0x9B): #NM where CR0.TS and CR0.MP are set, #MF where the x87 status word
//   says an unmasked exception is pending (ES), else nothing but RIP past it. Linux
//   runs one in fpu__drop() on every exec and exit.
//
// Everything else stays an emulation failure, reported with its bytes. (ldmxcsr is
// one: this host neither reports nor takes MXCSR through KVM_GET/SET_FPU or
// KVM_GET_XSAVE once the guest runs, so the VMM cannot complete it exactly; Linux's
// only CPL0 users are the SIMD drivers, kept off by clearcpuid, linux_host_fit.h.)
// A CPUID bit
// cannot hide what is missing here: this host ORs its own features into leaf 1
// (docs/host-notes.md), so XSAVE, for one, is turned off on the Linux command line.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_CPL0_COMPLETION_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_CPL0_COMPLETION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/x86_64/vmm/cpu/vcpu_state.h"
#include "vmm/run/exit_interceptor.h"

namespace sigvisor::x86 {

class Cpl0Completion : public ExitInterceptor {
 public:
  // `cpu` must outlive the interceptor.
  explicit Cpl0Completion(VcpuState& cpu) : cpu_(cpu) {}

  Interception Intercept(const VmExit& exit) override;
  std::vector<std::string> Warnings() override;

  uint64_t completed_int3() const { return completed_int3_; }
  uint64_t completed_fwait() const { return completed_fwait_; }

 private:
  // Moves RIP past the instruction (`length` bytes) and, when `vector` is set, injects
  // that exception (without an error code): a trap's frame points after it, a fault's
  // at it (the caller then passes length 0).
  absl::Status Complete(kvm_regs& regs, uint64_t length, std::optional<uint8_t> vector);

  VcpuState& cpu_;
  uint64_t completed_int3_ = 0;
  uint64_t completed_fwait_ = 0;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_CPL0_COMPLETION_H_
