// Kernel-entry stops: how the tracer follows the guest into its kernel on a host
// that runs guest CPL0 directly (hardware KVM: VMX or SVM).
//
// Single-stepping is RFLAGS.TF there, and delivering an exception, an interrupt or
// an `int` clears TF: a step that enters the kernel stops again only after the
// kernel has returned, and the kernel's part is lost. So while the stops are
// installed, every present gate of the guest's IDT points into a window of
// guest-virtual addresses that one added page-directory entry maps to guest-physical
// memory with nothing behind it. A delivery then ends in an instruction fetch that
// KVM cannot emulate, which at CPL0 exits to the VMM (KVM_EXIT_INTERNAL_ERROR,
// emulation failure) with the exception frame already pushed. Take() recognises the
// window, withdraws the #UD that KVM queues with such an exit, and moves RIP to the
// gate's real handler, where the tracer single-steps on.
//
// A kernel that enters through SYSCALL (Linux: MSR_LSTAR, whose entry masks TF through
// MSR_FMASK) gets the same kind of stop: LSTAR points into the window too, one slot past
// the IDT's, and Take() moves RIP to the real entry.
//
// The guest would see the change only by reading its own IDT, LSTAR or that
// page-directory entry while a trace runs; Remove() puts them back. A host that emulates guest
// CPL0 (PVM) stops at every kernel instruction without this.
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRACE_KERNEL_ENTRY_STOPS_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRACE_KERNEL_ENTRY_STOPS_H_

#include <linux/kvm.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/cpu/msr_index.h"
#include "arch/x86_64/vmm/cpu/vcpu_state.h"

namespace sigvisor::x86 {

class KernelEntryStops {
 public:
  // What Take() returns for an entry through SYSCALL (no IDT vector has it).
  static constexpr int kSyscallEntry = 256;

  // Redirects every present gate of the IDT that `sregs` names, under the page
  // tables at sregs.cr3. `ram_bytes`: guest RAM, which the window must lie above
  // (within the first GiB, which the kernel's page directory covers).
  // `flush_shadow_mmu` makes KVM see the page-table edit where it shadows the
  // guest's page tables (it may be empty).
  static absl::StatusOr<KernelEntryStops> Install(VcpuState& cpu, const kvm_sregs& sregs,
                                                  uint64_t ram_bytes,
                                                  std::function<absl::Status()> flush_shadow_mmu);

  // At an emulation-failure exit: the vector whose delivery ended in the window (or
  // kSyscallEntry), with the guest now at that vector's real handler; nullopt when the exit is not one of
  // these stops (RIP outside the window).
  absl::StatusOr<std::optional<int>> Take();

  // Puts the gates and the page-directory entry back.
  absl::Status Remove();

  KernelEntryStops(KernelEntryStops&&) = default;
  KernelEntryStops& operator=(KernelEntryStops&&) = default;

 private:
  KernelEntryStops(VcpuState& cpu, std::function<absl::Status()> flush_shadow_mmu)
      : cpu_(&cpu), flush_shadow_mmu_(std::move(flush_shadow_mmu)) {}
  absl::Status WriteGateOffset(uint64_t gate_address, uint64_t offset);

  VcpuState* cpu_;
  std::function<absl::Status()> flush_shadow_mmu_;
  uint64_t cr3_ = 0;
  uint64_t window_ = 0;       // guest-virtual = guest-physical, 2 MiB aligned
  uint64_t pde_address_ = 0;  // guest-physical address of the added entry
  std::map<int, std::pair<uint64_t, uint64_t>> gates_;  // vector -> (gate address, handler)
  uint64_t lstar_ = 0;  // the kernel's SYSCALL entry, 0 if it has none (then not redirected)
  bool installed_ = false;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRACE_KERNEL_ENTRY_STOPS_H_
