// The board of a sigvisor image (the bundled kernel, the test guests): identity-mapped
// long mode with sigvisor's boot info (long_mode.h, boot_layout.h), COM1, isa-debug-exit
// and the hypercall ports, with sigvisor's guest protocol (console, phases, exit,
// orders) and a signal=pv kernel's frame calls (pv_signal.h) behind them. No in-kernel irqchip on
// one vCPU: the trap mechanisms rely on `hlt` at CPL0 reaching the VMM.
//
// An SMP kernel (built with smp=on: its SMP note) may run on up to its note's count of
// vCPUs, with --trap off only (the trap engine watches vCPU 0 alone): the machine then
// has the in-kernel irqchip, the boot info says how many CPUs and how to send IPIs,
// CPUID shows the x2APIC, and the kernel starts each AP with SIGVISOR_HC_CPU_UP and
// may send IPIs with SIGVISOR_HC_SEND_IPI (smp_boot.h).
//
// The guest names its quiescent point (SIGVISOR_HC_ORDERS), so this board's VMs can be
// saved there and restored (a RestoredVm, docs/snapshots.md): restoring, the board
// maps the memory image instead of loading the image, puts vCPU 0 and its devices
// back (the machine puts back the APs and the in-kernel irqchip), and answers the
// saved request with the run's orders. An SMP kernel starts its APs only after that
// request, so a VM of several vCPUs is saved with none of them started, and restored
// with the vCPUs, IPI way and local APICs it was booted with.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_SIGVISOR_BOARD_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_SIGVISOR_BOARD_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch/x86_64/vmm/machine/board.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "arch/x86_64/vmm/machine/saved_vm.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/signal/pv_signal.h"
#include "devices/hypercall.h"
#include "devices/pc/debug_exit.h"
#include "devices/serial16550.h"
#include "vmm/run/guest_protocol.h"

namespace sigvisor::x86 {

class SigvisorBoard : public Board {
 public:
  // Refuses an image that does not speak this VMM's ABI version (or none: then it is
  // no kind sigvisor boots), and more than one vCPU but for an SMP kernel with --trap
  // off (not saved), up to its note's count.
  static absl::StatusOr<std::unique_ptr<Board>> Make(const ElfImage& image,
                                                     const SigvisorKernel& kernel,
                                                     const MachineConfig& config);

  // A VM of this board saved by `sigvisor snapshot`, restored: refuses a snapshot of
  // another image or size of machine, and what the restored guest cannot honour (a
  // trap mechanism its kernel was not booted for, fault injection, a debugger).
  static absl::StatusOr<std::unique_ptr<Board>> MakeRestored(const ElfImage& image,
                                                             const RestoredVm& restored,
                                                             const MachineConfig& config);

  bool in_kernel_irqchip() const override { return false; }
  // Sets leaf 1's x2APIC bit (ECX 21) on several vCPUs.
  std::vector<kvm_cpuid_entry2> Cpuid(std::span<const kvm_cpuid_entry2> supported) const override;
  bool aps_start_by_hypercall() const override { return true; }
  const SmpHypercalls* smp_hypercalls() const override {
    return smp_hypercalls_ ? &*smp_hypercalls_ : nullptr;
  }
  absl::StatusOr<GuestMemory> CreateMemory(uint64_t bytes) override;
  absl::StatusOr<std::string> Load(const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
                                   std::span<const kvm_cpuid_entry2> cpuid) override;
  absl::Status Attach(const BoardWiring& wiring) override;
  const CallGate* gate() const override {
    return hypercall_ports_ ? &*hypercall_ports_ : nullptr;
  }
  std::optional<int> exit_status() const override { return debug_exit_.exit_status(); }
  absl::StatusOr<std::vector<SnapshotPart>> SaveDevices() const override;
  std::optional<SignalFrameCounts> signal_frames() const override;

 private:
  // `smp_kernel`: the image has the SMP note (its phase markers carry IPI counts).
  SigvisorBoard(const MachineConfig& config, bool smp_kernel,
                std::shared_ptr<const SavedVm> restoring);
  absl::Status RestoreDevices();

  std::string cmdline_;
  uint32_t boot_flags_ = 0;   // sigvisor_boot_info.flags
  uint64_t pv_page_gpa_ = 0;  // --trap=pv's page, or 0
  int vcpus_ = 1;
  bool smp_kernel_ = false;
  uint32_t ipi_ = 0;  // sigvisor_boot_info.ipi (SIGVISOR_IPI_*)
  std::optional<SmpHypercalls> smp_hypercalls_;
  std::optional<Serial16550> serial_;
  DebugExit debug_exit_;
  std::optional<HypercallDevice> hypercall_ports_;
  std::optional<GuestProtocol> guest_protocol_;
  bool check_signal_frames_ = false;
  std::optional<PvSignalFrames> pv_signal_frames_;  // a signal=pv kernel's two calls
  std::shared_ptr<const SavedVm> restoring_;  // null: booting
  // The guest's unanswered orders request: where the quiescent point was reached
  // (saving), or where the saved guest waits (restoring).
  uint32_t orders_gpa_ = 0;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_SIGVISOR_BOARD_H_
