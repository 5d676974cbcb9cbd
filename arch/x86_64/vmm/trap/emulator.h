// Emulates one trapped instruction from its decoded operands, as the CPU would have
// executed it at CPL0 in 64-bit mode: general registers in a kvm_regs the caller
// fetched and will store, debug registers through the DrShadow, segment registers,
// descriptor tables and MSRs through a TrapCpu (KVM in a run, a fake in tests).
//
// Architectural faults are results, not errors: the instruction then has no effect,
// RIP stays at the site and the caller injects the fault. Checks follow the SDM's
// pseudo-code for MOV DR, MOV Sreg, POP Sreg, LFS/LGS/LSS, SWAPGS, WRFSBASE/WRGSBASE
// and WRMSR; where KVM's own emulator differs (it clears a segment base on a null
// selector load, as Intel CPUs do) this follows KVM, so a run with traps on sees what
// the same guest sees with traps off.
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_EMULATOR_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_EMULATOR_H_

#include <linux/kvm.h>

#include <cstdint>
#include <optional>
#include <span>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/trap/decoder.h"
#include "arch/x86_64/vmm/trap/dr_shadow.h"
#include "arch/x86_64/vmm/trap/trap_insn.h"

namespace sigvisor::trap {

inline constexpr uint8_t kVectorDb = 1;
inline constexpr uint8_t kVectorUd = 6;
inline constexpr uint8_t kVectorNp = 11;
inline constexpr uint8_t kVectorSs = 12;
inline constexpr uint8_t kVectorGp = 13;
inline constexpr uint8_t kVectorPf = 14;

// An exception the emulated instruction raises.
struct Fault {
  uint8_t vector = 0;
  std::optional<uint32_t> error_code;
  uint64_t cr2 = 0;  // #PF only
  bool operator==(const Fault&) const = default;
};

// The vCPU state the emulator reaches beyond the general registers.
class TrapCpu : public DrHardware {
 public:
  virtual absl::StatusOr<kvm_sregs> GetSregs() = 0;
  virtual absl::Status SetSregs(const kvm_sregs& sregs) = 0;
  // One MSR; nullopt / false when the host refuses it (a guest access would #GP).
  virtual absl::StatusOr<std::optional<uint64_t>> GetMsr(uint32_t index) = 0;
  virtual absl::StatusOr<bool> SetMsr(uint32_t index, uint64_t value) = 0;
  // Guest-virtual memory through the page tables at `cr3`; false when a byte of the
  // range is not mapped (nothing is written then).
  virtual bool ReadVirtual(uint64_t cr3, uint64_t gva, std::span<uint8_t> out) = 0;
  virtual bool WriteVirtual(uint64_t cr3, uint64_t gva, std::span<const uint8_t> data) = 0;
  // Delivers `fault` to the guest at its current RIP.
  virtual absl::Status InjectFault(const Fault& fault) = 0;
};

struct Emulation {
  TrapKind kind = TrapKind::kDrWrite;
  std::optional<Fault> fault;  // set: nothing changed, RIP is the site's
};

// Emulates `insn`, found at guest address `site`, on the state in `regs` (which the
// caller fetched, and stores afterwards: RIP is set to the next instruction, or to
// the site on a fault). Errors are host failures (an ioctl).
absl::StatusOr<Emulation> Emulate(const TrapInsn& insn, uint64_t site, kvm_regs& regs,
                                  TrapCpu& cpu, DrShadow& dr);

// General register `number` (encoding order: rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi,
// r8-r15) of `regs`.
__u64& Gpr(kvm_regs& regs, int number);

// The guest-virtual address `mem` names when its instruction runs at regs.rip (flat
// segments: a segment override is not applied).
uint64_t EffectiveAddress(const MemoryOperand& mem, const kvm_regs& regs);

}  // namespace sigvisor::trap

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_EMULATOR_H_
