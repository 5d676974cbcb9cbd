#include "arch/mips/vmm/ipi_device.h"

namespace sigvisor::mips {

IpiDevice::Effect IpiDevice::Write(uint64_t offset, uint32_t value) {
  Effect effect;
  if (offset == kIpiSend) {
    effect.sent = value & core_mask_;
    pending_ |= effect.sent;
  } else if (offset == kIpiAck) {
    effect.acknowledged = value & core_mask_;
    pending_ &= ~effect.acknowledged;
  }
  return effect;
}

uint32_t IpiDevice::Read(uint64_t offset) const {
  if (offset == kIpiPending) return pending_;
  if (offset == kIpiCoreCount) return static_cast<uint32_t>(cores_);
  return 0;
}

}  // namespace sigvisor::mips
