// A Linux x86 bzImage: its setup header checked (Documentation/arch/x86/boot.rst)
// and its payload decompressed on the host into the ELF vmlinux.
//
// The file is untrusted: every offset and length in the header is checked against
// the file before use, and each refusal is one line saying what the file is and what
// to do. Accepted kernels speak boot protocol 2.12 or later (Linux 3.8+, the first
// with xloadflags), are 64-bit (XLF_KERNEL_64: a 64-bit entry at the load address +
// 0x200) and load high (LOADED_HIGH), as every x86-64 kernel does.
#ifndef SIGVISOR_VMM_LOADER_LINUX_BZIMAGE_H_
#define SIGVISOR_VMM_LOADER_LINUX_BZIMAGE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/loader/linux/decompress.h"

namespace sigvisor::linux_boot {

// Offsets into the file (and into boot_params, which the header is copied into).
inline constexpr uint64_t kSetupHeaderOffset = 0x1f1;
inline constexpr uint64_t kHdrSOffset = 0x202;  // "HdrS"
inline constexpr uint32_t kHdrSMagic = 0x53726448;
inline constexpr uint16_t kBootFlag = 0xaa55;  // at 0x1fe
inline constexpr uint16_t kMinProtocol = 0x020c;  // 2.12: xloadflags

// loadflags and xloadflags bits.
inline constexpr uint8_t kLoadedHigh = 1 << 0;
inline constexpr uint16_t kXlfKernel64 = 1 << 0;
inline constexpr uint16_t kXlfCanBeLoadedAbove4G = 1 << 1;

struct BzImage {
  uint16_t protocol_version = 0;  // 0x020f is 2.15
  uint8_t setup_sects = 0;        // as read, 0 turned into 4
  uint8_t loadflags = 0;
  uint16_t xloadflags = 0;
  uint32_t init_size = 0;  // memory the kernel needs from its load address on
  uint64_t pref_address = 0;
  uint32_t kernel_alignment = 0;
  bool relocatable = false;
  uint32_t cmdline_size = 0;     // longest command line, without its NUL
  uint32_t initrd_addr_max = 0;  // highest address the initrd's last byte may have
  // Where the protected-mode kernel starts in the file: (setup_sects + 1) * 512.
  uint64_t kernel_offset = 0;
  // The payload: [kernel_offset + payload_offset, + payload_length) of the file.
  uint32_t payload_offset = 0;
  uint32_t payload_length = 0;
  // The file's setup header, offset 0x1f1 up to its end (0x202 + the byte at 0x201):
  // what the boot loader copies into boot_params.hdr before filling in its fields.
  std::vector<uint8_t> setup_header;
  Compression compression = Compression::kUnknown;
  std::vector<uint8_t> vmlinux;  // the decompressed payload, an ELF64 file
};

// Whether `file` carries a setup header's "HdrS" magic: a bzImage to ParseBzImage,
// as opposed to an ELF file (a vmlinux, a sigvisor image) or anything else.
bool LooksLikeBzImage(std::span<const uint8_t> file);

// Checks the setup header without decompressing; `vmlinux` stays empty.
absl::StatusOr<BzImage> ParseSetupHeader(std::span<const uint8_t> file);

// ParseSetupHeader, then decompresses the payload (see decompress.h; at most
// `max_vmlinux` bytes) and checks it is an ELF file.
absl::StatusOr<BzImage> ParseBzImage(std::span<const uint8_t> file,
                                     size_t max_vmlinux = kMaxDecompressedSize);

}  // namespace sigvisor::linux_boot

#endif  // SIGVISOR_VMM_LOADER_LINUX_BZIMAGE_H_
