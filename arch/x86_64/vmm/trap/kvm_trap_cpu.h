// The trap emulator's view of a KVM vCPU: general and segment registers, MSRs,
// debug registers, guest-virtual memory through the guest's page tables, and
// exception injection.
//
// Every vCPU ioctl costs about 9 us on a nested PVM host (as much as the trap's own
// exit), so where KVM offers it (KVM_CAP_SYNC_REGS) registers, segment registers and
// events travel in the kvm_run page instead: KVM fills them in at every exit and
// loads what is marked dirty at the next KVM_RUN. FS and GS bases are the segment
// registers' bases; KERNEL_GS_BASE is cached, since at CPL0 only wrmsr and swapgs
// change it and every one of those is a trap site. A trap that only moves DR7 then
// costs no ioctl at all.
//
// Debug registers go one of two ways. Normally they are the guest's own, loaded with
// KVM_SET_DEBUGREGS. In guest-debug mode (the hw-gd mechanism) the VMM owns the
// hardware debug registers through KVM_SET_GUEST_DEBUG with DR7.GD always set, so
// every guest DR access exits; the guest's enabled breakpoints are loaded there
// too, and KVM never changes them behind the VMM's back.
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_KVM_TRAP_CPU_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_KVM_TRAP_CPU_H_

#include <optional>

#include "arch/x86_64/vmm/cpu/guest_debug.h"
#include "arch/x86_64/vmm/trap/emulator.h"
#include "vmm/kvm/kvm.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {

class KvmTrapCpu : public trap::TrapCpu {
 public:
  // Both must outlive this object. `sync_regs`: the host has KVM_CAP_SYNC_REGS for
  // registers, segment registers and events. `guest_debug` (may be null; must
  // outlive this object): the vCPU's guest-debug arbiter, through which guest-debug
  // mode loads its registers so that a debugger's breakpoints and steps coexist.
  KvmTrapCpu(KvmVcpu& vcpu, GuestMemory& memory, bool sync_regs,
             GuestDebug* guest_debug = nullptr)
      : vcpu_(vcpu), memory_(memory), sync_regs_(sync_regs), arbiter_(guest_debug) {}

  // Before the first KVM_RUN: asks KVM for synchronized registers at every exit and
  // reads KERNEL_GS_BASE once.
  absl::Status Start();

  // Switches to guest-debug mode: loads `regs` with KVM_SET_GUEST_DEBUG (USE_HW_BP,
  // DR7.GD set) and keeps them as the hardware state from now on.
  absl::Status EnterGuestDebug(const trap::DebugRegs& regs);

  // The general registers at the last exit, and their new values for the next entry.
  absl::StatusOr<kvm_regs> GetRegs();
  absl::Status SetRegs(const kvm_regs& regs);

  absl::StatusOr<trap::DebugRegs> GetDebugRegs() override;
  absl::Status SetDebugRegs(const trap::DebugRegs& regs) override;
  absl::StatusOr<kvm_sregs> GetSregs() override;
  absl::Status SetSregs(const kvm_sregs& sregs) override;
  absl::StatusOr<std::optional<uint64_t>> GetMsr(uint32_t index) override;
  absl::StatusOr<bool> SetMsr(uint32_t index, uint64_t value) override;
  bool ReadVirtual(uint64_t cr3, uint64_t gva, std::span<uint8_t> out) override;
  bool WriteVirtual(uint64_t cr3, uint64_t gva, std::span<const uint8_t> data) override;
  absl::Status InjectFault(const trap::Fault& fault) override;

 private:
  absl::StatusOr<kvm_vcpu_events> GetEvents();
  absl::Status SetEvents(const kvm_vcpu_events& events);
  template <typename T, typename Get>
  absl::StatusOr<T> Load(T kvm_sync_regs::*field, Get get);
  template <typename T, typename Set>
  absl::Status Store(T kvm_sync_regs::*field, uint64_t dirty_bit, const T& value, Set set);

  KvmVcpu& vcpu_;
  GuestMemory& memory_;
  const bool sync_regs_;
  std::optional<uint64_t> kernel_gs_base_;
  GuestDebug* arbiter_;
  std::optional<trap::DebugRegs> guest_debug_;  // set in guest-debug mode
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_KVM_TRAP_CPU_H_
