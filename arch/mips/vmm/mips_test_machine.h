// A bare one-or-more-core MIPS machine for the interpreter's tests: 1 MiB of RAM,
// programs placed by kseg0 address, vectors that spin where they land, a fake host
// device at physical 0x1f000000 - 0x1f000fff, and on request the vdso page at
// kVdsoAddress.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_TEST_MACHINE_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_TEST_MACHINE_H_

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "arch/mips/vmm/mips_encode.h"
#include "arch/mips/vmm/mips_system.h"

namespace sigvisor::mips {

class TestMachine {
 public:
  static constexpr uint32_t kCode = 0x80001000;
  static constexpr uint64_t kDeviceBase = 0x1f000000;
  static constexpr uint32_t kRefill = 0x80000000;
  static constexpr uint32_t kGeneral = 0x80000180;
  static constexpr uint32_t kInterrupt = 0x80000200;

  explicit TestMachine(int cores = 1, uint64_t quantum = MipsSystem::kDefaultQuantum,
                       bool vdso = false)
      : ram_(1 << 20) {
    system_ = *MipsSystem::Create(
        ram_, cores, [](uint64_t pa) { return pa >= kDeviceBase && pa < kDeviceBase + 0x1000; },
        quantum, vdso ? std::optional<uint64_t>(kVdsoAddress) : std::nullopt);
    for (uint32_t vector : {kRefill, kGeneral, kInterrupt}) {
      Load(vector, {encode::Beq(0, 0, -1), encode::Nop()});
    }
    for (int i = 0; i < cores; ++i) system_->core(i).Reset(kCode);
  }

  MipsSystem& system() { return *system_; }
  MipsCore& core(int i = 0) { return system_->core(i); }

  // Writes `words` at kseg0/kseg1 address `at`.
  void Load(uint32_t at, std::initializer_list<uint32_t> words) {
    uint32_t pa = at & 0x1fffffff;
    for (uint32_t w : words) {
      Poke32(pa, w);
      pa += 4;
    }
  }
  void Load(std::initializer_list<uint32_t> words) { Load(kCode, words); }
  void Poke32(uint32_t pa, uint32_t v) { std::memcpy(&ram_[pa], &v, 4); }
  uint32_t Peek32(uint32_t pa) const {
    uint32_t v;
    std::memcpy(&v, &ram_[pa], 4);
    return v;
  }
  // Runs core `i` for `n` steps; returns why it stopped.
  StopReason Step(uint64_t n, int i = 0) {
    uint64_t steps = 0;
    return core(i).Run(n, steps);
  }
  uint32_t exc_code(int i = 0) { return (core(i).cause() >> 2) & 31; }

 private:
  std::vector<uint8_t> ram_;
  std::unique_ptr<MipsSystem> system_;
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_TEST_MACHINE_H_
