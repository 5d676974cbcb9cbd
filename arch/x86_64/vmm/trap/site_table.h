// Trap sites: every instruction in a guest image's executable sections that the
// trap engine must see (debug-register moves and segment-register loads), found by
// a Capstone linear sweep that restarts at every ELF symbol, and the patch that
// makes each one reach the VMM: its first byte becomes `hlt` (0xf4) in guest RAM.
#ifndef SIGVISOR_ARCH_X86_64_VMM_TRAP_SITE_TABLE_H_
#define SIGVISOR_ARCH_X86_64_VMM_TRAP_SITE_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/trap/decoder.h"
#include "arch/x86_64/vmm/trap/trap_insn.h"
#include "vmm/loader/elf_image.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::trap {

// The byte that replaces each site's first byte: at CPL0 without an in-kernel
// irqchip it is a KVM_EXIT_HLT with RIP one past it, on PVM and hardware KVM alike.
inline constexpr uint8_t kTrapByte = 0xf4;

struct TrapSite {
  uint64_t address = 0;   // guest-virtual, as linked
  uint64_t physical = 0;  // its first byte in guest RAM once the image is loaded
  std::vector<uint8_t> bytes;  // the original instruction
  std::string symbol;          // "cpu_init+0x2a", or the address without symbols
  std::string text;            // Capstone's AT&T disassembly
  TrapInsn insn;
};

class SiteTable {
 public:
  SiteTable() = default;
  explicit SiteTable(std::vector<TrapSite> sites);

  // The site starting at `address`, or nullptr.
  const TrapSite* Find(uint64_t address) const;
  // In address order.
  const std::vector<TrapSite>& sites() const { return sites_; }
  size_t size() const { return sites_.size(); }
  bool empty() const { return sites_.empty(); }

 private:
  std::vector<TrapSite> sites_;
};

// Every trap site in `image`'s executable sections. Decoding restarts at each symbol
// inside a section, so data or padding between functions cannot desynchronise the
// sweep past the next function. An image without section headers has no sites.
absl::StatusOr<SiteTable> ScanImage(const ElfImage& image, const Decoder& decoder);

// Writes kTrapByte over the first byte of each site in `memory` (where LoadElfImage
// put the image), checking first that every one still holds its original bytes.
// With `include_debug_register_sites` false, DR moves are left alone (hw-gd traps them).
absl::Status PatchSites(const SiteTable& sites, GuestMemory& memory,
                        bool include_debug_register_sites = true);

}  // namespace sigvisor::trap

#endif  // SIGVISOR_ARCH_X86_64_VMM_TRAP_SITE_TABLE_H_
