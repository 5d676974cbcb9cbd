#include "arch/x86_64/vmm/machine/multiboot_board.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "arch/x86_64/vmm/machine/linux_boot.h"
#include "arch/x86_64/vmm/machine/pc_firmware.h"
#include "vmm/loader/elf_loader.h"

namespace sigvisor::x86 {

absl::StatusOr<std::unique_ptr<Board>> MultibootBoard::Make(const ElfImage& image,
                                                            const MultibootKernel& kernel,
                                                            const MachineConfig& config) {
  if (config.trap != TrapMechanism::kOff) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--trap=%s is for sigvisor images (64-bit code scanned for trap sites); a Multiboot "
        "kernel runs with --trap=off",
        TrapMechanismName(config.trap)));
  }
  if (config.injection_events) {
    return absl::UnimplementedError(
        "--inject is for the bundled kernel: fault injection reads sigvisor's boot protocol "
        "(its phase markers, the host-signal mailbox, the kernel's own report of each "
        "fault); a Multiboot kernel speaks none of it");
  }
  if (!config.interceptors.empty()) {
    return absl::UnimplementedError(
        "the tracer and the gdb stub work on sigvisor images only; not on a Multiboot kernel");
  }
  return std::unique_ptr<Board>(new MultibootBoard(kernel, config));
}

MultibootBoard::MultibootBoard(const MultibootKernel& kernel, const MachineConfig& config)
    : kernel_(kernel),
      cmdline_(kernel.image_name.empty() ? config.cmdline
                                         : absl::StrCat(kernel.image_name, " ", config.cmdline)),
      vcpus_(config.vcpus),
      irqchip_(kernel.irqchip || config.vcpus > 1) {}

absl::StatusOr<std::string> MultibootBoard::Load(const ElfImage& image, GuestMemory& memory,
                                                 KvmVcpu& vcpu,
                                                 std::span<const kvm_cpuid_entry2> cpuid) {
  if (absl::Status s = LoadElfImage(image, memory); !s.ok()) return s;
  if (absl::Status s = WriteMultibootState(memory, image, cmdline_, kernel_.modules); !s.ok()) {
    return s;
  }
  if (absl::Status s = SetUpMultibootVcpu(vcpu, image.entry(), cpuid); !s.ok()) return s;
  if (irqchip_) {
    // The BSP's LAPIC in virtual-wire mode, as a PC's firmware leaves it: the PIC's
    // interrupts arrive through LINT0 (ExtINT), NMIs through LINT1. (KVM's reset state
    // has LINT0 so only by a quirk a host may turn off.)
    absl::StatusOr<kvm_lapic_state> lapic = vcpu.GetLapic();
    if (!lapic.ok()) return lapic.status();
    SetVirtualWireLints(*lapic);
    if (absl::Status s = vcpu.SetLapic(*lapic); !s.ok()) return s;
  }
  return cmdline_;
}

absl::Status MultibootBoard::Attach(const BoardWiring& wiring) {
  serial_.emplace(wiring.console);
  fw_cfg_.emplace(wiring.memory.size(), static_cast<uint16_t>(vcpus_));
  Bus& bus = wiring.bus;
  std::vector<absl::Status> registered = {
      bus.Register(AddressSpace::kPort, kSerialPort, Serial16550::kPortCount, &*serial_),
      bus.Register(AddressSpace::kPort, kDebugExitPort, DebugExit::kPortCount, &debug_exit_),
      bus.Register(AddressSpace::kPort, FwCfg::kPortBase, FwCfg::kPortCount, &*fw_cfg_),
      bus.Register(AddressSpace::kPort, PciAbsent::kPortBase, PciAbsent::kPortCount, &pci_),
  };
  if (irqchip_) {  // KVM's own PICs and PIT answer their ports
    if (absl::Status s = LeaveFirmwareState(wiring.vm, wiring.memory); !s.ok()) return s;
    rtc_.emplace(wiring.memory.size(), 0, [] { return absl::Now(); });
    testdev_.emplace(
        [&vm = wiring.vm](int line, bool level) { SetIsaIrqLine(vm, line, level); });
    registered.push_back(
        bus.Register(AddressSpace::kPort, CmosRtc::kPortBase, CmosRtc::kPortCount, &*rtc_));
    registered.push_back(RegisterPcTestdev(bus, *testdev_));
  } else {
    registered.push_back(
        bus.Register(AddressSpace::kPort, kPicMasterPort, PicMasks::kPortCount, &pic_master_));
    registered.push_back(
        bus.Register(AddressSpace::kPort, kPicSlavePort, PicMasks::kPortCount, &pic_slave_));
  }
  for (const absl::Status& s : registered) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace sigvisor::x86
