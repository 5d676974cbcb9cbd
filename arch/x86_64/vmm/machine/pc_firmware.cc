#include "arch/x86_64/vmm/machine/pc_firmware.h"

#include <linux/kvm.h>

#include <array>

namespace sigvisor::x86 {
namespace {

// Real-mode code, assembled by hand (pc_firmware_test disassembles it with Capstone).
constexpr std::array<uint8_t, 0x25> kHandlerCode = {
    // 0x00 iret: the BIOS services this firmware does not provide, and exceptions
    0xcf,  // iret
    // 0x01 master_eoi: IRQ 1-7
    0x50,        // push ax
    0xb0, 0x20,  // mov al, 0x20          ; OCW2: non-specific EOI
    0xe6, 0x20,  // out 0x20, al          ; to the master
    0x58,        // pop ax
    0xcf,        // iret
    // 0x08 slave_eoi: IRQ 8-15
    0x50,        // push ax
    0xb0, 0x20,  // mov al, 0x20
    0xe6, 0xa0,  // out 0xa0, al          ; to the slave
    0xe6, 0x20,  // out 0x20, al          ; and to the master
    0x58,        // pop ax
    0xcf,        // iret
    // 0x11 timer: IRQ 0. SeaBIOS also wraps the count at midnight (0x1800b0 ticks, a
    // day at 18.2 Hz) and runs the floppy motor's timeout; no guest here lives a day.
    0x50,                          // push ax
    0x1e,                          // push ds
    0x31, 0xc0,                    // xor ax, ax
    0x8e, 0xd8,                    // mov ds, ax
    0x66, 0xff, 0x06, 0x6c, 0x04,  // inc dword [0x46c]  ; the BDA's tick count
    0xcd, 0x1c,                    // int 0x1c           ; the user timer hook
    0xb0, 0x20,                    // mov al, 0x20
    0xe6, 0x20,                    // out 0x20, al
    0x1f,                          // pop ds
    0x58,                          // pop ax
    0xcf,                          // iret
};
static_assert(kHandlerCode[kFirmwareHandlers.master_eoi] == 0x50);
static_assert(kHandlerCode[kFirmwareHandlers.slave_eoi] == 0x50);
static_assert(kHandlerCode[kFirmwareHandlers.timer] == 0x50 &&
              kHandlerCode[kFirmwareHandlers.timer + 1] == 0x1e);

constexpr uint16_t kFirmwareSegment = kFirmwareHandlersGpa >> 4;

// An 8259 after a BIOS's ICW1-ICW4 (edge, cascade, 8086 mode, normal EOI) and OCW1.
// The trigger modes (ELCR) stay as KVM has them.
absl::Status InitializePic(KvmVm& vm, uint32_t chip_id, uint8_t vector_base, uint8_t mask) {
  absl::StatusOr<kvm_irqchip> chip = vm.GetIrqchip(chip_id);
  if (!chip.ok()) return chip.status();
  kvm_pic_state& pic = chip->chip.pic;
  pic.irq_base = vector_base;
  pic.imr = mask;
  pic.irr = 0;
  pic.isr = 0;
  pic.init_state = 0;  // initialized: the next writes to the data port are OCW1s
  pic.init4 = 1;
  pic.auto_eoi = 0;
  pic.read_reg_select = 0;
  return vm.SetIrqchip(*chip);
}

}  // namespace

std::span<const uint8_t> FirmwareHandlerCode() { return kHandlerCode; }

absl::Status LeaveFirmwareState(KvmVm& vm, GuestMemory& memory) {
  if (absl::Status s = memory.Write(kFirmwareHandlersGpa, kHandlerCode); !s.ok()) return s;
  std::array<uint32_t, 256> ivt;  // segment:offset, offset in the low half
  for (int vector = 0; vector < 256; ++vector) {
    uint16_t handler = kFirmwareHandlers.iret;
    if (vector == kBiosMasterVectorBase) handler = kFirmwareHandlers.timer;
    if (vector > kBiosMasterVectorBase && vector < kBiosMasterVectorBase + 8) {
      handler = kFirmwareHandlers.master_eoi;
    }
    if (vector >= kBiosSlaveVectorBase && vector < kBiosSlaveVectorBase + 8) {
      handler = kFirmwareHandlers.slave_eoi;
    }
    ivt[vector] = static_cast<uint32_t>(kFirmwareSegment) << 16 | handler;
  }
  if (absl::Status s = memory.WriteObject(0, ivt); !s.ok()) return s;
  if (absl::Status s = memory.WriteObject<uint32_t>(kBdaTicksGpa, 0); !s.ok()) return s;

  if (absl::Status s =
          InitializePic(vm, KVM_IRQCHIP_PIC_MASTER, kBiosMasterVectorBase, kBiosMasterMask);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          InitializePic(vm, KVM_IRQCHIP_PIC_SLAVE, kBiosSlaveVectorBase, kBiosSlaveMask);
      !s.ok()) {
    return s;
  }

  // PIT channel 0 as SeaBIOS programs it (control word 0x36: lobyte/hibyte, mode 3,
  // binary; count 0, i.e. 65536): KVM_SET_PIT2 reloads each channel's count, which
  // starts channel 0's periodic timer.
  absl::StatusOr<kvm_pit_state2> pit = vm.GetPit();
  if (!pit.ok()) return pit.status();
  kvm_pit_channel_state& channel = pit->channels[0];
  channel.count = 0;
  channel.mode = 3;
  channel.bcd = 0;
  channel.rw_mode = channel.read_state = channel.write_state = 3;  // lobyte, then hibyte
  channel.gate = 1;
  return vm.SetPit(*pit);
}

}  // namespace sigvisor::x86
