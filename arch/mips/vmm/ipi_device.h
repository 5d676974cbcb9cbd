// The sigvisor inter-core interrupt device (docs/mips-platform.md, "sigvisor IPI
// device"): a pending bit per core, set by SEND, cleared by ACK, read as PENDING;
// CORES reads the number of cores. It only keeps the bits: the machine (MipsSystem)
// turns them into each core's Cause.IP2 line and counts the IPIs sent.
#ifndef SIGVISOR_ARCH_MIPS_VMM_IPI_DEVICE_H_
#define SIGVISOR_ARCH_MIPS_VMM_IPI_DEVICE_H_

#include <cstdint>

namespace sigvisor::mips {

inline constexpr uint64_t kIpiBase = 0x1f200000;
inline constexpr uint64_t kIpiSize = 0x10;
inline constexpr uint64_t kIpiSend = 0x0;
inline constexpr uint64_t kIpiAck = 0x4;
inline constexpr uint64_t kIpiPending = 0x8;
inline constexpr uint64_t kIpiCoreCount = 0xc;
inline constexpr int kMaxCores = 32;  // one bit per core in the registers

class IpiDevice {
 public:
  // 1 to kMaxCores cores.
  explicit IpiDevice(int cores)
      : cores_(cores), core_mask_(cores >= 32 ? 0xffffffffu : ((1u << cores) - 1)) {}

  // What a write changed: the cores a SEND targeted (bits past the last core are
  // ignored) and the cores an ACK cleared. Writes elsewhere in the block do nothing.
  struct Effect {
    uint32_t sent = 0;
    uint32_t acknowledged = 0;
  };
  Effect Write(uint64_t offset, uint32_t value);
  // PENDING, CORES; anything else in the block reads 0.
  uint32_t Read(uint64_t offset) const;

  uint32_t pending() const { return pending_; }

 private:
  const int cores_;
  const uint32_t core_mask_;
  uint32_t pending_ = 0;
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_IPI_DEVICE_H_
