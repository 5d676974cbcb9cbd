// Fuzzes the MIPS interpreter: random instruction words (at the boot address and at
// the exception vectors, so exceptions run random code too), random CP0 state and TLB
// entries, one to four cores, and a fake host device whose MMIO exits are answered
// with input bytes. Every run must return; no access may leave the RAM span (ASan
// watches under --config=fuzz), and the counters must stay consistent.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "arch/mips/vmm/mips_system.h"

namespace {

using sigvisor::mips::MipsSystem;
using sigvisor::mips::SystemStop;

// Reads the input front to back; zeros once it runs out.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{U8()} << (8 * i);
    return v;
  }
  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  size_t left() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

constexpr size_t kRamBytes = 64 << 10;  // small: most random addresses miss RAM

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  std::vector<uint8_t> ram(kRamBytes);
  const int cores = 1 + (in.U8() & 3);
  const uint64_t quantum = 1 + (in.U8() & 63);
  auto created = MipsSystem::Create(
      ram, cores, [](uint64_t pa) { return pa >= 0x1f000000 && pa < 0x1f000100; }, quantum);
  if (!created.ok()) std::abort();
  MipsSystem& system = **created;

  // CP0 writes: (reg, sel, value) triples, then TLB entries written through CP0 and
  // a tlbwi (an instruction word the program area may also hold).
  const int cp0_writes = in.U8() & 31;
  for (int i = 0; i < cp0_writes; ++i) {
    const uint8_t which = in.U8();
    const uint32_t value = in.U32();
    system.core(which >> 7 ? (which & 3) % cores : 0).WriteCp0(which & 31, (which >> 5) & 3, value);
  }
  // Code: up to 256 words at the boot address (kseg0 0x80001000) and 32 at each
  // vector, the rest of RAM zero (nop).
  uint32_t word_count = 0;
  for (uint32_t pa = 0x1000; pa < 0x1400 && in.left() >= 4; pa += 4, ++word_count) {
    const uint32_t w = in.U32();
    std::memcpy(&ram[pa], &w, 4);
  }
  for (uint32_t vector : {0x000u, 0x180u, 0x200u}) {
    for (uint32_t pa = vector; pa < vector + 0x80 && in.left() >= 4; pa += 4) {
      const uint32_t w = in.U32();
      std::memcpy(&ram[pa], &w, 4);
    }
  }
  for (int i = 0; i < cores; ++i) {
    for (int r = 1; r < 32; ++r) system.core(i).set_gpr(r, in.U32());
  }

  // Run, answering MMIO reads with input bytes, for a bounded number of steps.
  uint64_t budget = 20000;
  while (budget > 0) {
    const uint64_t slice = std::min<uint64_t>(budget, 997);
    const auto event = system.Run(slice);
    budget -= slice;
    if (event.stop == SystemStop::kHalted) break;
    if (event.stop == SystemStop::kMmio) {
      auto& pending = system.core(event.core).mutable_pending_mmio();
      if (!pending.active || pending.completed || pending.size == 0 || pending.size > 4) {
        std::abort();
      }
      if (pending.paddr < 0x1f000000 || pending.paddr >= 0x1f000100) std::abort();
      if (!pending.is_write) {
        for (uint32_t b = 0; b < pending.size; ++b) pending.data[b] = in.U8();
      }
      system.core(event.core).CompleteMmio();
    }
  }
  const auto total = system.Total();
  if (total.tlb_refills + total.tlb_invalid + total.tlb_modified + total.syscalls >
      total.exceptions) {
    std::abort();
  }
  (void)word_count;
  return 0;
}
