// The board of a Multiboot v1 kernel, as `qemu-system-x86_64 -kernel` boots one
// (multiboot_boot.h): COM1, isa-debug-exit, fw_cfg (its CPU count and RAM size) and
// PCI configuration space with no devices. With an in-kernel irqchip (--irqchip, or
// more than one vCPU) it is the PC QEMU gives such kernels: KVM's LAPICs, IOAPIC,
// PICs and PIT, the CMOS RTC, and QEMU's pc-testdev (its latch, page flush, IRQ lines
// and 64 KiB of memory) with its lines wired to the IOAPIC and PICs, and the PICs, PIT
// and real-mode IVT as SeaBIOS leaves them (pc_firmware.h). Without one, the
// PICs' mask registers only (writes accepted), and no interrupt source. No call gate:
// such a kernel makes no sigvisor hypercalls.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_MULTIBOOT_BOARD_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_MULTIBOOT_BOARD_H_

#include <memory>
#include <optional>
#include <string>

#include "arch/x86_64/vmm/machine/board.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "devices/pc/cmos_rtc.h"
#include "devices/pc/debug_exit.h"
#include "devices/pc/fw_cfg.h"
#include "devices/pc/pc_stubs.h"
#include "devices/pc/pc_testdev.h"
#include "devices/serial16550.h"

namespace sigvisor::x86 {

class MultibootBoard : public Board {
 public:
  // Refuses a trap mechanism (they scan sigvisor images' 64-bit code) and interceptors
  // (the tracer and the gdb stub read sigvisor's boot protocol).
  static absl::StatusOr<std::unique_ptr<Board>> Make(const ElfImage& image,
                                                     const MultibootKernel& kernel,
                                                     const MachineConfig& config);

  bool in_kernel_irqchip() const override { return irqchip_; }
  bool in_kernel_pit() const override { return irqchip_; }
  absl::StatusOr<std::string> Load(const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
                                   std::span<const kvm_cpuid_entry2> cpuid) override;
  absl::Status Attach(const BoardWiring& wiring) override;
  std::optional<int> exit_status() const override { return debug_exit_.exit_status(); }

 private:
  MultibootBoard(const MultibootKernel& kernel, const MachineConfig& config);

  const MultibootKernel& kernel_;
  std::string cmdline_;
  int vcpus_ = 1;
  bool irqchip_ = false;  // the machine's, which more than one vCPU implies
  std::optional<Serial16550> serial_;
  DebugExit debug_exit_;
  std::optional<FwCfg> fw_cfg_;
  PicMasks pic_master_, pic_slave_;
  PciAbsent pci_;
  // With the irqchip:
  std::optional<CmosRtc> rtc_;
  std::optional<PcTestdev> testdev_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_MULTIBOOT_BOARD_H_
