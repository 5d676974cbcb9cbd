#include "devices/pc/pc_testdev.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

// The three 4-port blocks at kPortBase.
constexpr uint64_t kLatch = 0;
constexpr uint64_t kFlush = 4;

uint64_t BlockOf(uint64_t offset) { return offset & ~uint64_t{3}; }

}  // namespace

PcTestdev::PcTestdev(SetIrqLine set_irq_line) : set_irq_line_(std::move(set_irq_line)) {}

uint64_t PcTestdev::SizeOf(int range) {
  switch (range) {
    case kPorts: return kPortCount;
    case kIrqPorts: return kIrqLines;
    default: return kMemorySize;
  }
}

std::string PcTestdev::AccessName(int range, uint64_t offset) const {
  switch (range) {
    case kIrqPorts: return "pc-testdev irq line";
    case kMemory: return "pc-testdev memory";
  }
  switch (BlockOf(offset)) {
    case kLatch: return "pc-testdev latch";
    case kFlush: return "pc-testdev flush page";
    default: return "pc-testdev byte latch";
  }
}

absl::StatusOr<DeviceAction> PcTestdev::Read(int range, uint64_t offset,
                                             std::span<uint8_t> data) {
  if (offset >= SizeOf(range) || data.size() > SizeOf(range) - offset) {
    return absl::OutOfRangeError(absl::StrFormat(
        "pc-testdev: a %d-byte read at offset %#x of %s is outside it", data.size(), offset,
        AccessName(range, 0)));
  }
  switch (range) {
    case kMemory:
      std::copy_n(memory_bytes_.begin() + offset, data.size(), data.begin());
      break;
    case kIrqPorts: std::fill(data.begin(), data.end(), 0xff); break;
    default:
      // Byte by byte: each of the latch's bytes sits at its own offset in both latch
      // blocks, which is what QEMU's masks and shifts amount to for an access in one.
      for (size_t i = 0; i < data.size(); ++i) {
        const uint64_t at = offset + i;
        data[i] = BlockOf(at) == kFlush ? 0xff : static_cast<uint8_t>(latch_ >> (8 * (at & 3)));
      }
  }
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> PcTestdev::Write(int range, uint64_t offset,
                                              std::span<const uint8_t> data) {
  if (offset >= SizeOf(range) || data.size() > SizeOf(range) - offset) {
    return absl::OutOfRangeError(absl::StrFormat(
        "pc-testdev: a %d-byte write at offset %#x of %s is outside it", data.size(), offset,
        AccessName(range, 0)));
  }
  switch (range) {
    case kMemory: std::copy(data.begin(), data.end(), memory_bytes_.begin() + offset); break;
    case kIrqPorts:
      if (data.size() != 1) {  // QEMU's ops accept only byte writes here
        return absl::InvalidArgumentError(absl::StrFormat(
            "pc-testdev: a %d-byte write to IRQ line %d; its ports take 1-byte writes (outb)",
            data.size(), offset));
      }
      if (set_irq_line_) set_irq_line_(static_cast<int>(offset), data[0] != 0);
      break;
    default:
      for (size_t i = 0; i < data.size(); ++i) {
        const uint64_t at = offset + i;
        if (BlockOf(at) == kFlush) continue;  // nothing to flush: no cached guest memory
        const int shift = static_cast<int>(8 * (at & 3));
        latch_ = (latch_ & ~(uint32_t{0xff} << shift)) | (uint32_t{data[i]} << shift);
      }
  }
  return DeviceAction::kContinue;
}

PcTestdev::State PcTestdev::SaveState() const {
  State state = {};
  state.latch = latch_;
  std::copy(memory_bytes_.begin(), memory_bytes_.end(), state.memory.begin());
  return state;
}

void PcTestdev::RestoreState(const State& state) {
  latch_ = state.latch;
  std::copy(state.memory.begin(), state.memory.end(), memory_bytes_.begin());
}

}  // namespace sigvisor
