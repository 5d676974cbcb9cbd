// The board of a sigvisor image (the bundled kernel, the test guests): identity-mapped
// long mode with sigvisor's boot info (long_mode.h, boot_layout.h), COM1, isa-debug-exit
// and the hypercall ports, with sigvisor's guest protocol (console, phases, exit)
// behind them. No in-kernel irqchip: the trap mechanisms rely on `hlt` at CPL0
// reaching the VMM, and one vCPU.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_SIGVISOR_BOARD_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_SIGVISOR_BOARD_H_

#include <memory>
#include <optional>
#include <string>

#include "arch/x86_64/vmm/machine/board.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
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

  bool in_kernel_irqchip() const override { return false; }
  absl::StatusOr<std::string> Load(const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
                                   std::span<const kvm_cpuid_entry2> cpuid) override;
  absl::Status Attach(const BoardWiring& wiring) override;
  const CallGate* gate() const override {
    return hypercall_ports_ ? &*hypercall_ports_ : nullptr;
  }
  std::optional<int> exit_status() const override { return debug_exit_.exit_status(); }

 private:
  explicit SigvisorBoard(const MachineConfig& config);

  std::string cmdline_;
  uint32_t boot_flags_ = 0;   // sigvisor_boot_info.flags
  uint64_t pv_page_gpa_ = 0;  // --trap=pv's page, or 0
  std::optional<Serial16550> serial_;
  DebugExit debug_exit_;
  std::optional<HypercallDevice> hypercall_ports_;
  std::optional<GuestProtocol> guest_protocol_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_SIGVISOR_BOARD_H_
