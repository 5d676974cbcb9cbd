#include "arch/x86_64/vmm/machine/linux_board.h"

#include <vector>

#include "absl/time/clock.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kCom1Port = 0x3f8;
constexpr uint64_t kDebugExitPort = 0xf4;
constexpr int kCom1Irq = 4;

}  // namespace

LinuxBoard::LinuxBoard(KvmVm& vm, uint64_t memory_bytes,
                       std::function<void(std::string_view)> console)
    : vm_(vm),
      serial_(std::move(console), [this](bool level) { SetIrqLine(kCom1Irq, level); }),
      rtc_(memory_bytes, 0, [] { return absl::Now(); }),
      i8042_([this](bool level) { SetIrqLine(I8042::kKeyboardIrq, level); },
             [this](bool level) { SetIrqLine(I8042::kAuxIrq, level); }),
      testdev_([this](int line, bool level) { SetIrqLine(line, level); }) {}

void LinuxBoard::SetIrqLine(int irq, bool level) {
  // KVM_IRQ_LINE fails only without the in-kernel irqchip, which a Linux machine
  // always has; a device has no one to tell.
  (void)vm_.SetIrqLine(static_cast<uint32_t>(irq), level);
}

absl::Status LinuxBoard::Register(Bus& bus) {
  const std::vector<absl::Status> registered = {
      bus.Register(AddressSpace::kPort, kCom1Port, Serial16550::kPortCount, &serial_),
      bus.Register(AddressSpace::kPort, CmosRtc::kPortBase, CmosRtc::kPortCount, &rtc_),
      bus.Register(AddressSpace::kPort, I8042::kDataPort, I8042::kPortCount,
                   &i8042_.data_port()),
      bus.Register(AddressSpace::kPort, I8042::kCommandPort, I8042::kPortCount,
                   &i8042_.command_port()),
      bus.Register(AddressSpace::kPort, PcTestdev::kPortBase, PcTestdev::kPortCount,
                   &testdev_.ports()),
      bus.Register(AddressSpace::kPort, PcTestdev::kIrqPortBase, PcTestdev::kIrqLines,
                   &testdev_.irq_ports()),
      bus.Register(AddressSpace::kMmio, PcTestdev::kMemoryBase, PcTestdev::kMemorySize,
                   &testdev_.memory()),
      bus.Register(AddressSpace::kPort, PciAbsent::kPortBase, PciAbsent::kPortCount, &pci_),
      bus.Register(AddressSpace::kPort, kDebugExitPort, DebugExit::kPortCount, &debug_exit_),
  };
  for (const absl::Status& s : registered) {
    if (!s.ok()) return s;
  }
  bus.SetUnclaimed(AddressSpace::kPort, &unclaimed_ports_);
  bus.SetUnclaimed(AddressSpace::kMmio, &unclaimed_mmio_);
  return absl::OkStatus();
}

}  // namespace sigvisor::x86
