// The R4K-style joint TLB of one core: 32 entries, each mapping an even/odd pair of
// pages (EntryLo0/EntryLo1) of the size PageMask gives, tagged with VPN2 and an
// 8-bit ASID unless global. Lookup is what the core does on every mapped access;
// Probe/Read/Write are tlbp, tlbr and tlbwi/tlbwr.
#ifndef SIGVISOR_ARCH_MIPS_VMM_TLB_H_
#define SIGVISOR_ARCH_MIPS_VMM_TLB_H_

#include <array>
#include <cstdint>
#include <optional>

#include "arch/mips/vmm/cp0.h"

namespace sigvisor::mips {

struct TlbEntry {
  uint32_t page_mask = 0;  // PageMask as written (bits 28:13)
  uint32_t entry_hi = 0;   // VPN2 | ASID
  uint32_t entry_lo[2] = {0, 0};
  bool global = false;  // G of both EntryLo halves (AND, as tlbwi stores it)
};

// What a lookup of a mapped address found.
enum class TlbResult {
  kHit,       // valid, and writable if a store
  kRefill,    // no matching entry
  kInvalid,   // matching entry, V = 0
  kModified,  // matching entry, store, D = 0
};

struct TlbTranslation {
  TlbResult result = TlbResult::kRefill;
  uint64_t paddr = 0;      // for kHit, and for kModified where the store would have gone
  uint32_t page_base = 0;  // virtual start of the hit page
  uint32_t page_bytes = 0;
  bool dirty = false;  // the page is writable
};

class Tlb {
 public:
  // Translates `vaddr` under `asid`. When several entries match (which the guest must
  // avoid; real hardware may shut down), the lowest-numbered wins.
  TlbTranslation Lookup(uint32_t vaddr, uint32_t asid, bool is_store) const;

  // tlbp: the index of the entry matching EntryHi's VPN2 and ASID, if any.
  std::optional<uint32_t> Probe(uint32_t entry_hi) const;

  const TlbEntry& Read(uint32_t index) const { return entries_[index % kTlbEntries]; }
  void Write(uint32_t index, uint32_t page_mask, uint32_t entry_hi, uint32_t lo0, uint32_t lo1);

 private:
  std::array<TlbEntry, kTlbEntries> entries_{};
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_TLB_H_
