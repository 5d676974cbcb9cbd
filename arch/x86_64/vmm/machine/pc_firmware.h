// What a PC's firmware leaves behind for the kernel it boots, for the boards whose
// guests were written for `qemu-system-x86_64 -kernel` (SeaBIOS): the two 8259s
// initialized at the BIOS's vector bases (0x08 master, 0x70 slave) with SeaBIOS's
// masks, PIT channel 0 ticking at 18.2 Hz (mode 3, count 65536) into IRQ 0, and a
// real-mode IVT whose handlers acknowledge the PICs and whose timer handler advances
// the BIOS data area's tick count, so a kernel that drops to real mode can `sti`.
// Only the interrupt state: no BIOS services (int 0x10, 0x13, ...), whose vectors
// point at a bare `iret`.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_PC_FIRMWARE_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_PC_FIRMWARE_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "vmm/kvm/kvm.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {

inline constexpr uint8_t kBiosMasterVectorBase = 0x08;
inline constexpr uint8_t kBiosSlaveVectorBase = 0x70;
// The masks SeaBIOS leaves (QEMU 7.2, read back by tests/guests/multiboot/mb_bios_pcdev.S):
// master: IRQ 0 (timer), 1 (keyboard), 2 (cascade) and 6 (floppy) open; slave: IRQ 8
// (RTC), 12 (mouse), 13 (FPU) and 14 (IDE) open.
inline constexpr uint8_t kBiosMasterMask = 0xb8;
inline constexpr uint8_t kBiosSlaveMask = 0x8e;

// Where the handlers live: F000:0000, the BIOS's segment, which the Multiboot memory
// map leaves out of the RAM it offers.
inline constexpr uint64_t kFirmwareHandlersGpa = 0xf0000;
inline constexpr uint64_t kBdaTicksGpa = 0x46c;  // the BIOS data area's tick count

// The 16-bit handler code at kFirmwareHandlersGpa and each handler's offset in it
// (exposed for the test that disassembles it).
std::span<const uint8_t> FirmwareHandlerCode();
struct FirmwareHandlerOffsets {
  uint16_t iret, master_eoi, slave_eoi, timer;
};
inline constexpr FirmwareHandlerOffsets kFirmwareHandlers = {0x00, 0x01, 0x08, 0x11};

// Writes the IVT and the handlers into `memory`, and sets KVM's in-kernel PICs and PIT
// (made by CreateIrqchip and CreatePit) as the firmware leaves them.
absl::Status LeaveFirmwareState(KvmVm& vm, GuestMemory& memory);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_PC_FIRMWARE_H_
