#include "arch/mips/vmm/tlb.h"

namespace sigvisor::mips {
namespace {

// The bits of a virtual address an entry's VPN2 compares: above the pair of pages.
uint32_t Vpn2CompareMask(uint32_t page_mask) { return ~(page_mask | 0x1fffu); }

bool Matches(const TlbEntry& e, uint32_t vaddr, uint32_t asid) {
  const uint32_t mask = Vpn2CompareMask(e.page_mask);
  if ((vaddr & mask) != (e.entry_hi & mask)) return false;
  return e.global || (e.entry_hi & kEntryHiAsidMask) == asid;
}

}  // namespace

TlbTranslation Tlb::Lookup(uint32_t vaddr, uint32_t asid, bool is_store) const {
  TlbTranslation t;
  for (const TlbEntry& e : entries_) {
    if (!Matches(e, vaddr, asid)) continue;
    // Each of the pair is half the VPN2 span; the bit just below VPN2 picks one.
    const uint32_t page_bytes = ((e.page_mask | 0x1fffu) + 1) >> 1;
    const uint32_t lo = e.entry_lo[(vaddr & page_bytes) != 0 ? 1 : 0];
    if ((lo & kEntryLoV) == 0) {
      t.result = TlbResult::kInvalid;
      return t;
    }
    t.dirty = (lo & kEntryLoD) != 0;
    const uint64_t pfn = (lo >> 6) & 0xfffffu;
    t.page_bytes = page_bytes;
    t.page_base = vaddr & ~(page_bytes - 1);
    // A large page's frame number is aligned to its size: the low PFN bits are ignored.
    t.paddr = ((pfn << 12) & ~uint64_t{page_bytes - 1}) | (vaddr & (page_bytes - 1));
    t.result = is_store && !t.dirty ? TlbResult::kModified : TlbResult::kHit;
    return t;
  }
  return t;
}

std::optional<uint32_t> Tlb::Probe(uint32_t entry_hi) const {
  const uint32_t asid = entry_hi & kEntryHiAsidMask;
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    if (Matches(entries_[i], entry_hi & kEntryHiVpn2Mask, asid)) return i;
  }
  return std::nullopt;
}

void Tlb::Write(uint32_t index, uint32_t page_mask, uint32_t entry_hi, uint32_t lo0, uint32_t lo1) {
  TlbEntry& e = entries_[index % kTlbEntries];
  e.page_mask = page_mask & kPageMaskWritable;
  // VPN2 is stored without the bits PageMask covers, as the hardware does.
  e.entry_hi = (entry_hi & kEntryHiVpn2Mask & ~e.page_mask) | (entry_hi & kEntryHiAsidMask);
  e.global = (lo0 & lo1 & kEntryLoG) != 0;
  e.entry_lo[0] = lo0 & kEntryLoWritable;
  e.entry_lo[1] = lo1 & kEntryLoWritable;
}

}  // namespace sigvisor::mips
