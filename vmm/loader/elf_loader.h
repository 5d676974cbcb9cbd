// Copies a validated ELF image into guest RAM, and checks its ABI note.
#ifndef SIGVISOR_VMM_LOADER_ELF_LOADER_H_
#define SIGVISOR_VMM_LOADER_ELF_LOADER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "vmm/loader/elf_image.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor {

// Copies each PT_LOAD segment's file bytes to its p_paddr and zero-fills
// [paddr + filesz, paddr + memsz) (bss). Every segment is checked against guest RAM
// before anything is written, so a refused image leaves `memory` untouched. Refuses
// images that are not bootable() (ET_DYN or dynamically linked host binaries).
// The segment index in messages is the index into image.segments().
absl::Status LoadElfImage(const ElfImage& image, GuestMemory& memory);

// OK when the image's sigvisor ABI note says `expected` (normally
// SIGVISOR_ABI_VERSION); FailedPrecondition when the note is missing or differs.
absl::Status CheckAbiVersion(const ElfImage& image, uint32_t expected);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LOADER_ELF_LOADER_H_
