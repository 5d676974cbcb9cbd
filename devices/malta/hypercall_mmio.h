// The hypercall gate as an MMIO window (the MIPS platform, docs/mips-platform.md):
// a 32-bit store of an argument block's physical address to base + 4 * NR makes
// hypercall NR, exactly as the x86-64 `outl` to port 0x500 + NR. The same table
// (vmm/run/hypercall_table.h) serves both; this window only says NR is the word.
#ifndef SIGVISOR_DEVICES_MALTA_HYPERCALL_MMIO_H_
#define SIGVISOR_DEVICES_MALTA_HYPERCALL_MMIO_H_

#include <cstdint>

#include "vmm/run/hypercall_table.h"

namespace sigvisor {

class HypercallMmioWindow : public HypercallGate {
 public:
  // Bytes the window occupies (0x1f100000 - 0x1f1000ff).
  static constexpr uint64_t kWindowBytes = 0x100;

  // A store that is not a whole aligned word names no hypercall: an error, as a
  // malformed port hypercall is.
  explicit HypercallMmioWindow(const HypercallTable& calls) : HypercallGate(calls, 4) {}
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_MALTA_HYPERCALL_MMIO_H_
