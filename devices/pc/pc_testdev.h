// QEMU's pc-testdev (hw/misc/pc-testdev.c), so test kernels written for
// `qemu -kernel ... -device pc-testdev` (kvm-unit-tests) run unchanged:
//   ports 0xe0-0xe3    a 32-bit latch: a write of any width stores its bytes at their
//                      offset, a read returns them (string I/O tests echo through it)
//   ports 0xe4-0xe7    page flush: QEMU re-protects the page whose address is written
//                      (4 bytes) to drop KVM's mappings of it; here a no-op, which a
//                      test may not tell apart
//   ports 0xe8-0xeb    the same latch again, taken a byte at a time (QEMU's ioport-byte)
//   ports 0x2000-0x2017  IRQ line n at 0x2000 + n: a 1-byte write of v sets line n to
//                      v != 0, every time (a repeated level is the interrupt
//                      controller's business, as in QEMU)
//   MMIO 0xff000000-0xff00ffff  64 KiB of plain memory, read and written at any width
// Reads of the flush and IRQ ports, which QEMU does not answer, read all-ones.
//
// Three ranges, three devices on the bus: ports() at kPortBase, irq_ports() at
// kIrqPortBase, memory() at kMemoryBase.
#ifndef SIGVISOR_DEVICES_PC_PC_TESTDEV_H_
#define SIGVISOR_DEVICES_PC_PC_TESTDEV_H_

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

class PcTestdev : public MultiRangeDevice {
 public:
  static constexpr uint64_t kPortBase = 0xe0;
  static constexpr uint64_t kPortCount = 12;  // latch, flush, byte latch: 4 each
  static constexpr uint64_t kIrqPortBase = 0x2000;
  static constexpr uint64_t kIrqLines = 24;  // the IOAPIC's pins; ports 0x2000-0x2017
  static constexpr uint64_t kMemoryBase = 0xff000000;
  static constexpr uint64_t kMemorySize = 0x10000;

  // Sets interrupt line `line` (0-23: the ISA IRQ / IOAPIC pin) to `level`. The
  // machine connects it to KVM_IRQ_LINE; may be empty (the writes are then dropped).
  using SetIrqLine = std::function<void(int line, bool level)>;

  explicit PcTestdev(SetIrqLine set_irq_line);

  PcTestdev(const PcTestdev&) = delete;
  PcTestdev& operator=(const PcTestdev&) = delete;

  Device& ports() { return ports_; }
  Device& irq_ports() { return irq_ports_; }
  Device& memory() { return memory_; }

  uint32_t latch() const { return latch_; }

  // What a snapshot keeps (docs/snapshots.md): the latch and the test memory.
  struct State {
    uint32_t latch;
    uint32_t reserved;
    std::array<uint8_t, kMemorySize> memory;
  };
  State SaveState() const;
  void RestoreState(const State& state);

  std::string_view name() const override { return "pc-testdev"; }
  std::string AccessName(int range, uint64_t offset) const override;
  absl::StatusOr<DeviceAction> Read(int range, uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(int range, uint64_t offset,
                                     std::span<const uint8_t> data) override;

 private:
  enum Range { kPorts, kIrqPorts, kMemory };
  static uint64_t SizeOf(int range);

  SetIrqLine set_irq_line_;
  uint32_t latch_ = 0;
  std::vector<uint8_t> memory_bytes_ = std::vector<uint8_t>(kMemorySize, 0);
  DeviceRange ports_{*this, kPorts};
  DeviceRange irq_ports_{*this, kIrqPorts};
  DeviceRange memory_{*this, kMemory};
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_PC_PC_TESTDEV_H_
