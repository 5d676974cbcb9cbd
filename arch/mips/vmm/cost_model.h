// The MIPS target's cost model: how retired instructions and the events the
// interpreter counts become modelled cycles and modelled time. The constants are the
// contract's (docs/mips-platform.md, "Cost model") and live only here, so every
// report that prints modelled time prints these same numbers.
#ifndef SIGVISOR_ARCH_MIPS_VMM_COST_MODEL_H_
#define SIGVISOR_ARCH_MIPS_VMM_COST_MODEL_H_

#include <cstdint>

namespace sigvisor::mips {

struct CostModel {
  // One cycle per retired instruction: an in-order 2009-era MIPS core at best.
  static constexpr uint64_t kCyclesPerInstruction = 1;
  // Pipeline flush, vector fetch and the first handler instructions' refill.
  static constexpr uint64_t kCyclesPerException = 20;
  // A Hit_Invalidate_I / synci line: the cache op plus the refetch it causes later.
  static constexpr uint64_t kCyclesPerFlushedLine = 10;
  // A cross-core interrupt round trip on a 2009-era MIPS SMP is hundreds of cycles.
  static constexpr uint64_t kCyclesPerIpiSent = 200;
  static constexpr uint64_t kClockHz = 500'000'000;

  static constexpr uint64_t Cycles(uint64_t instructions, uint64_t exceptions,
                                   uint64_t flushed_lines, uint64_t ipis_sent) {
    return instructions * kCyclesPerInstruction + exceptions * kCyclesPerException +
           flushed_lines * kCyclesPerFlushedLine + ipis_sent * kCyclesPerIpiSent;
  }
  static constexpr double Seconds(uint64_t cycles) {
    return static_cast<double>(cycles) / static_cast<double>(kClockHz);
  }
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_COST_MODEL_H_
