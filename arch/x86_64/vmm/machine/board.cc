#include "arch/x86_64/vmm/machine/board.h"

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/machine/boot_layout.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "arch/x86_64/vmm/machine/linux_board.h"
#include "arch/x86_64/vmm/machine/multiboot_board.h"
#include "arch/x86_64/vmm/machine/sigvisor_board.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"

namespace sigvisor::x86 {
namespace {

// --ipi is the boot info's word for an SMP sigvisor kernel; other guests send their
// IPIs as their code does. --lapic goes with it: the VMM's local APIC models what that
// kernel uses (fixed IPIs, no timer), not what a PC's guest expects of one.
absl::Status CheckNoSmpKernelOptions(const MachineConfig& config, std::string_view kind) {
  if (config.lapic) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--lapic %s is for the bundled kernel built with smp=on on several vCPUs; a %s gets "
        "KVM's in-kernel local APIC (the VMM's models no timer, no INIT/SIPI)",
        LapicName(*config.lapic), kind));
  }
  if (!config.ipi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "--ipi %s is for the bundled kernel built with smp=on (its boot info says how to send "
      "IPIs); a %s sends its IPIs its own way",
      IpiMethodName(*config.ipi), kind));
}

struct BoardMaker {
  const ElfImage& image;
  const MachineConfig& config;
  absl::StatusOr<std::unique_ptr<Board>> operator()(const SigvisorKernel& kernel) const {
    return SigvisorBoard::Make(image, kernel, config);
  }
  absl::StatusOr<std::unique_ptr<Board>> operator()(const MultibootKernel& kernel) const {
    if (absl::Status s = CheckNoSmpKernelOptions(config, "Multiboot kernel"); !s.ok()) return s;
    return MultibootBoard::Make(image, kernel, config);
  }
  absl::StatusOr<std::unique_ptr<Board>> operator()(const LinuxKernel& kernel) const {
    if (absl::Status s = CheckNoSmpKernelOptions(config, "Linux kernel"); !s.ok()) return s;
    return LinuxBoard::Make(image, kernel, config);
  }
  absl::StatusOr<std::unique_ptr<Board>> operator()(const RestoredVm& restored) const {
    if (restored.protocol == BootProtocol::kLinux) {
      if (absl::Status s = CheckNoSmpKernelOptions(config, "Linux kernel"); !s.ok()) return s;
      return LinuxBoard::MakeRestored(image, restored, config);
    }
    return SigvisorBoard::MakeRestored(image, restored, config);
  }
};

}  // namespace

void SetIsaIrqLine(KvmVm& vm, int irq, bool level) {
  (void)vm.SetIrqLine(static_cast<uint32_t>(irq), level);
}

absl::Status RegisterPcTestdev(Bus& bus, PcTestdev& testdev) {
  for (absl::Status s : {
           bus.Register(AddressSpace::kPort, PcTestdev::kPortBase, PcTestdev::kPortCount,
                        &testdev.ports()),
           bus.Register(AddressSpace::kPort, PcTestdev::kIrqPortBase, PcTestdev::kIrqLines,
                        &testdev.irq_ports()),
           bus.Register(AddressSpace::kMmio, PcTestdev::kMemoryBase, PcTestdev::kMemorySize,
                        &testdev.memory()),
       }) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckLoadsAboveBootState(const ElfImage& image) {
  if (image.load_begin() >= kImageMinGpa) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "the image loads at %#x, below %#x where sigvisor keeps the boot page tables; link "
      "it at 1 MiB or above",
      image.load_begin(), kImageMinGpa));
}

absl::StatusOr<std::unique_ptr<Board>> MakeBoard(const ElfImage& image,
                                                 const MachineConfig& config) {
  return std::visit(BoardMaker{image, config}, config.target);
}

}  // namespace sigvisor::x86
