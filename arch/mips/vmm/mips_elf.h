// A MIPS guest image: an ELF32, little-endian, EM_MIPS, statically linked ET_EXEC
// file, as `mipsel-linux-gnu-gcc -no-pie -static` with a kseg0 linker script makes
// it and as `qemu-system-mipsel -M malta -kernel` loads it.
//
// The input is untrusted (a user's file, fuzz data): Parse checks every offset, size
// and sum against the buffer before it reads, and each problem is a one-line
// absl::Status. Segments load at their physical address: p_paddr with the kseg bits
// dropped (p_paddr & 0x1fffffff), which is p_vaddr's physical address for an image
// linked in kseg0 or kseg1 (docs/mips-platform.md, "Boot").
#ifndef SIGVISOR_ARCH_MIPS_VMM_MIPS_ELF_H_
#define SIGVISOR_ARCH_MIPS_VMM_MIPS_ELF_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::mips {

struct MipsSegment {
  uint64_t paddr = 0;  // physical: where Load copies it
  uint32_t vaddr = 0;
  uint32_t memsz = 0;
  uint32_t filesz = 0;  // [filesz, memsz) is zero-filled
  uint32_t flags = 0;   // PF_X 1, PF_W 2, PF_R 4
  uint32_t offset = 0;  // in the file
};

class MipsElfImage {
 public:
  static absl::StatusOr<MipsElfImage> Parse(std::vector<uint8_t> bytes);

  uint32_t entry() const { return entry_; }
  const std::vector<MipsSegment>& segments() const { return segments_; }
  // Physical end of the highest segment.
  uint64_t load_end() const { return load_end_; }

  // Copies the segments into `memory` (zero-filling bss); OutOfRange naming the
  // segment if one does not fit.
  absl::Status Load(GuestMemory& memory) const;

  // "name+0x14" for an address in a function, from SHT_SYMTAB; hex otherwise.
  std::string Symbolize(uint32_t vaddr) const;

 private:
  std::vector<uint8_t> bytes_;
  uint32_t entry_ = 0;
  std::vector<MipsSegment> segments_;
  uint64_t load_end_ = 0;
  std::map<uint32_t, std::pair<std::string, uint32_t>> functions_;  // start -> name, size
};

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_MIPS_ELF_H_
