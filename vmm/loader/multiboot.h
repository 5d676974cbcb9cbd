// The Multiboot v1 header of a kernel built for `qemu-system-x86_64 -kernel`.
//
// The header is 32-bit aligned within the first 8 KiB of the file: magic 0x1BADB002,
// flags, checksum (the three sum to 0 mod 2^32). Flag bit 16 (the "a.out kludge")
// says the header's address fields give where to load the file and where to enter
// it; without it the kernel is an ELF file loaded by its program headers (QEMU does
// the same). Like every other part of the loader, this reads untrusted bytes and
// checks every offset first.
#ifndef SIGVISOR_VMM_LOADER_MULTIBOOT_H_
#define SIGVISOR_VMM_LOADER_MULTIBOOT_H_

#include <cstdint>
#include <optional>
#include <span>

#include "absl/status/statusor.h"

namespace sigvisor {

inline constexpr uint32_t kMultibootHeaderMagic = 0x1badb002;
inline constexpr uint32_t kMultibootBootloaderMagic = 0x2badb002;  // in EAX at entry
inline constexpr uint64_t kMultibootSearchBytes = 8192;
inline constexpr uint32_t kMultibootPageAlign = 1u << 0;   // modules page aligned
inline constexpr uint32_t kMultibootMemoryInfo = 1u << 1;  // mem_* (and mmap) wanted
inline constexpr uint32_t kMultibootVideoMode = 1u << 2;   // a video mode wanted
inline constexpr uint32_t kMultibootAoutKludge = 1u << 16;  // the address fields are valid

struct MultibootHeader {
  uint64_t file_offset = 0;  // of the magic
  uint32_t flags = 0;
  // Valid when flags has kMultibootAoutKludge.
  uint32_t header_addr = 0;
  uint32_t load_addr = 0;
  uint32_t load_end_addr = 0;  // 0: load to the end of the file
  uint32_t bss_end_addr = 0;   // 0: no bss
  uint32_t entry_addr = 0;
};

// The first Multiboot v1 header in `file`; nullopt when there is none. A header
// whose checksum is wrong is skipped (it is just bytes that happen to match the
// magic), as GRUB and QEMU do. A header that asks for something sigvisor cannot
// give (unknown required flag bits 3-15) is an error.
absl::StatusOr<std::optional<MultibootHeader>> FindMultibootHeader(
    std::span<const uint8_t> file);

// Where an a.out-kludge kernel loads: the file bytes [file_offset, +bytes.size())
// go to load_addr, then zeros to bss_end. Checked against the file.
struct MultibootAoutLoad {
  uint32_t load_addr = 0;
  std::span<const uint8_t> bytes;
  uint64_t memsz = 0;  // bytes.size() plus the bss
  uint32_t entry = 0;
};
absl::StatusOr<MultibootAoutLoad> MultibootAoutLayout(std::span<const uint8_t> file,
                                                      const MultibootHeader& header);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LOADER_MULTIBOOT_H_
