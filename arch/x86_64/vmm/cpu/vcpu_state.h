// A vCPU's state for the mechanisms inside the run loop that are not the trap
// engine (the tracer, the gdb stub): general and segment registers, guest-virtual
// memory through the guest's page tables, and the guest-debug arbiter.
//
// Where the host has KVM_CAP_SYNC_REGS, registers and segment registers travel in
// the kvm_run page: KVM fills them in at every exit (no ioctl: a single-step trace
// costs one KVM_RUN per instruction, not three) and loads what is marked dirty at the
// next entry. The trap engine's KvmTrapCpu uses the same page the same way, so the
// two always agree. Before the first KVM_RUN the page holds nothing yet, and without
// synchronization (nobody asked for it) the ioctls are used.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_VCPU_STATE_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_VCPU_STATE_H_

#include <linux/kvm.h>

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/cpu/guest_debug.h"
#include "vmm/kvm/kvm.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {

class VcpuState {
 public:
  // Both must outlive this object. `sync_regs`: the host has KVM_CAP_SYNC_REGS for
  // registers, segment registers and events (the caller checked).
  VcpuState(KvmVcpu& vcpu, GuestMemory& memory, bool sync_regs);
  VcpuState(const VcpuState&) = delete;
  VcpuState& operator=(const VcpuState&) = delete;

  // Asks KVM for the registers in kvm_run at every exit (the trap engine asks too).
  // Call before the first KVM_RUN.
  void RequestSync();

  // The run loop's backend calls this after every KVM_RUN.
  void NoteExit() {
    exited_ = true;
    reanchor_ = debug_.single_stepping();
  }

  // The run loop's backend calls this before every KVM_RUN. While the guest is
  // single-stepped, the step is asked for again at the current RIP after every exit
  // (GuestDebug::Reanchor): KVM drops TF whenever RIP moves under it, both when the
  // VMM moves it and when KVM itself emulates an instruction (a debug-register move,
  // a port access). Registers the VMM changed in kvm_run, which KVM would load only
  // at entry, are loaded by ioctl first so that the step anchors at the new RIP.
  absl::Status PrepareEntry();

  absl::StatusOr<kvm_regs> GetRegs();
  absl::Status SetRegs(const kvm_regs& regs);
  absl::StatusOr<kvm_sregs> GetSregs();
  absl::Status SetSregs(const kvm_sregs& sregs);

  // CPL from CS (its DPL in 64-bit mode).
  absl::StatusOr<int> Cpl();

  // Guest-virtual memory under page-table root `cr3`; false (nothing copied) when a
  // page is not mapped or not guest RAM.
  bool ReadVirtual(uint64_t cr3, uint64_t gva, std::span<uint8_t> out) const;
  bool WriteVirtual(uint64_t cr3, uint64_t gva, std::span<const uint8_t> data);
  // Up to `len` bytes at `gva`, stopping at the first unmapped page.
  std::vector<uint8_t> ReadVirtualUpTo(uint64_t cr3, uint64_t gva, size_t len) const;

  GuestDebug& debug() { return debug_; }
  KvmVcpu& vcpu() { return vcpu_; }
  GuestMemory& memory() { return memory_; }

 private:
  bool Synced() const;

  KvmVcpu& vcpu_;
  GuestMemory& memory_;
  const bool sync_regs_;
  bool exited_ = false;
  bool reanchor_ = false;
  GuestDebug debug_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_VCPU_STATE_H_
