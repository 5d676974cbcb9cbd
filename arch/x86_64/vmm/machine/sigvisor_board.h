// The board of a sigvisor image (the bundled kernel, the test guests): identity-mapped
// long mode with sigvisor's boot info (long_mode.h, boot_layout.h), COM1, isa-debug-exit
// and the hypercall ports, with sigvisor's guest protocol (console, phases, exit,
// orders) and a signal=pv kernel's frame calls (pv_signal.h) behind them. No in-kernel irqchip: the
// trap mechanisms rely on `hlt` at CPL0 reaching the VMM, and one vCPU.
//
// The guest names its quiescent point (SIGVISOR_HC_ORDERS), so this board's VMs can be
// saved there and restored (a RestoredVm, docs/snapshots.md): restoring, the board
// maps the memory image instead of loading the image, puts vCPU 0 and its devices
// back, and answers the saved request with the run's orders.
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
  // no kind sigvisor boots) and more than one vCPU.
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
  SigvisorBoard(const MachineConfig& config, std::shared_ptr<const SavedVm> restoring);
  absl::Status RestoreDevices();

  std::string cmdline_;
  uint32_t boot_flags_ = 0;   // sigvisor_boot_info.flags
  uint64_t pv_page_gpa_ = 0;  // --trap=pv's page, or 0
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
