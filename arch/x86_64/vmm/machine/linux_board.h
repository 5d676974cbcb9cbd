// The PC a stock Linux kernel boots on, as kvmtool and Firecracker give it: the
// in-kernel irqchip and PIT (the machine creates them), COM1 with its interrupt on
// IRQ 4, the CMOS RTC, the i8042's reset line, PCI configuration space with no
// devices, QEMU's pc-testdev and isa-debug-exit. (The Linux marker port, by which the
// embedded init marks its phases, is the run's call gate: the machine registers it
// with the session, linux_marker_gate.h.) Every port and MMIO
// address that nothing claims reads as all-ones and ignores writes, as on a PC; the
// exit ledger counts those by port.
//
// The devices live here, one object per machine, and outlive the run.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOARD_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOARD_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "devices/pc/cmos_rtc.h"
#include "devices/pc/debug_exit.h"
#include "devices/pc/i8042.h"
#include "devices/pc/pc_stubs.h"
#include "devices/pc/pc_testdev.h"
#include "devices/pc/unclaimed.h"
#include "devices/serial16550.h"
#include "vmm/kvm/kvm.h"
#include "vmm/machine/bus.h"

namespace sigvisor::x86 {

class LinuxBoard {
 public:
  // `vm` (for interrupt lines) must outlive the board; `console` takes COM1's output.
  LinuxBoard(KvmVm& vm, uint64_t memory_bytes, std::function<void(std::string_view)> console);
  LinuxBoard(const LinuxBoard&) = delete;
  LinuxBoard& operator=(const LinuxBoard&) = delete;

  // Registers every device on `bus`, and the unclaimed answer for both spaces.
  absl::Status Register(Bus& bus);

  DebugExit& debug_exit() { return debug_exit_; }

 private:
  // Sets ISA interrupt line `irq` (an IOAPIC pin and a PIC input: KVM's default
  // routing, which the MP table states).
  void SetIrqLine(int irq, bool level);

  KvmVm& vm_;
  Serial16550 serial_;
  CmosRtc rtc_;
  I8042 i8042_;
  PciAbsent pci_;
  PcTestdev testdev_;
  DebugExit debug_exit_;
  Unclaimed unclaimed_ports_;
  Unclaimed unclaimed_mmio_;
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOARD_H_
