#include "vmm/loader/linux/bzimage.h"

#include <bit>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sigvisor::linux_boot {
namespace {

using Bytes = std::span<const uint8_t>;

static_assert(std::endian::native == std::endian::little,
              "the setup header's fields are read by memcpy");

// Field offsets in the file (boot.rst, "The real-mode kernel header").
constexpr uint64_t kSetupSects = 0x1f1;
constexpr uint64_t kBootFlagOffset = 0x1fe;
constexpr uint64_t kJumpOffset = 0x201;  // the jump's 8-bit displacement: the header's end
constexpr uint64_t kVersion = 0x206;
constexpr uint64_t kLoadflags = 0x211;
constexpr uint64_t kInitrdAddrMax = 0x22c;
constexpr uint64_t kKernelAlignment = 0x230;
constexpr uint64_t kRelocatableKernel = 0x234;
constexpr uint64_t kXloadflags = 0x236;
constexpr uint64_t kCmdlineSize = 0x238;
constexpr uint64_t kPayloadOffset = 0x248;
constexpr uint64_t kPayloadLength = 0x24c;
constexpr uint64_t kPrefAddress = 0x258;
constexpr uint64_t kInitSize = 0x260;
// Protocol 2.12's header runs at least to the end of init_size; boot_params leaves
// room for it up to 0x290, where the EDD buffers begin.
constexpr uint64_t kMinHeaderEnd = kInitSize + 4;
constexpr uint64_t kMaxHeaderEnd = 0x290;

absl::Status Invalid(std::string message) {
  return absl::InvalidArgumentError(std::move(message));
}

// A payload error (decompress.h says "payload ...") said of the bzImage.
absl::Status InBzImage(const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("bzImage's ", status.message()));
}

// Reads a field the caller has checked lies inside `file`.
template <typename T>
T Field(Bytes file, uint64_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, file.data() + offset, sizeof(T));
  return value;
}

std::string Version(uint16_t version) {
  return absl::StrFormat("%d.%02d", version >> 8, version & 0xff);
}

absl::Status CheckMagicAndVersion(Bytes file) {
  if (file.size() < kVersion + 2) {
    return Invalid(absl::StrFormat(
        "file is %d bytes, too short for a bzImage's setup header (0x%x bytes); is it "
        "truncated?",
        file.size(), kVersion + 2));
  }
  if (!LooksLikeBzImage(file)) {
    return Invalid(
        "not a bzImage (no \"HdrS\" at offset 0x202) nor an ELF file; give a Linux bzImage "
        "(arch/x86/boot/bzImage, /boot/vmlinuz-*) or an ELF vmlinux");
  }
  if (Field<uint16_t>(file, kBootFlagOffset) != kBootFlag) {
    return Invalid(absl::StrFormat(
        "bzImage's boot_flag at 0x1fe is 0x%04x, not 0xaa55; the file is corrupt",
        Field<uint16_t>(file, kBootFlagOffset)));
  }
  const uint16_t version = Field<uint16_t>(file, kVersion);
  if (version < kMinProtocol) {
    return Invalid(absl::StrFormat(
        "bzImage speaks boot protocol %s; sigvisor needs %s or later (Linux 3.8+, which "
        "says in xloadflags whether the kernel is 64-bit): use a newer kernel",
        Version(version), Version(kMinProtocol)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> ReadSetupHeaderBytes(Bytes file) {
  const uint64_t end = 0x202 + uint64_t{file[kJumpOffset]};
  if (end < kMinHeaderEnd || end > kMaxHeaderEnd) {
    return Invalid(absl::StrFormat(
        "bzImage's setup header ends at 0x%x (from the jump at 0x200); protocol 2.12 needs "
        "0x%x to 0x%x: the file is corrupt",
        end, kMinHeaderEnd, kMaxHeaderEnd));
  }
  if (end > file.size()) {
    return Invalid(absl::StrFormat(
        "bzImage is truncated: %d bytes, but its setup header ends at 0x%x", file.size(), end));
  }
  return std::vector<uint8_t>(file.begin() + kSetupHeaderOffset, file.begin() + end);
}

absl::Status CheckFlags(const BzImage& image) {
  if ((image.loadflags & kLoadedHigh) == 0) {
    return Invalid(
        "bzImage loads low (LOADED_HIGH clear: a zImage); sigvisor boots kernels that load at "
        "1 MiB or above, as every x86-64 kernel does");
  }
  if ((image.xloadflags & kXlfKernel64) == 0) {
    return Invalid(
        "bzImage is a 32-bit kernel (no XLF_KERNEL_64 in xloadflags); sigvisor boots x86-64 "
        "kernels: build with CONFIG_X86_64=y");
  }
  return absl::OkStatus();
}

absl::Status CheckLayout(const BzImage& image, uint64_t file_size) {
  if (image.kernel_offset >= file_size) {
    return Invalid(absl::StrFormat(
        "bzImage is truncated: %d bytes, but its %d setup sectors end at 0x%x", file_size,
        image.setup_sects, image.kernel_offset));
  }
  const uint64_t kernel_size = file_size - image.kernel_offset;
  if (image.payload_offset > kernel_size ||
      image.payload_length > kernel_size - image.payload_offset) {
    return Invalid(absl::StrFormat(
        "bzImage's payload [0x%x, +0x%x) lies outside the file (%d bytes, kernel at 0x%x); "
        "the file is truncated or corrupt",
        image.kernel_offset + image.payload_offset, image.payload_length, file_size,
        image.kernel_offset));
  }
  if (image.payload_length == 0) return Invalid("bzImage has an empty payload (no kernel)");
  if (image.init_size == 0) return Invalid("bzImage's init_size is 0; the file is corrupt");
  if (image.relocatable && !std::has_single_bit(image.kernel_alignment)) {
    return Invalid(absl::StrFormat(
        "bzImage's kernel_alignment 0x%x is not a power of two; the file is corrupt",
        image.kernel_alignment));
  }
  return absl::OkStatus();
}

}  // namespace

bool LooksLikeBzImage(std::span<const uint8_t> file) {
  return file.size() >= kHdrSOffset + 4 && Field<uint32_t>(file, kHdrSOffset) == kHdrSMagic;
}

absl::StatusOr<BzImage> ParseSetupHeader(std::span<const uint8_t> file) {
  if (absl::Status s = CheckMagicAndVersion(file); !s.ok()) return s;
  absl::StatusOr<std::vector<uint8_t>> header = ReadSetupHeaderBytes(file);
  if (!header.ok()) return header.status();

  // Every field read below lies before kMinHeaderEnd, inside the checked header.
  BzImage image;
  image.protocol_version = Field<uint16_t>(file, kVersion);
  image.setup_sects = file[kSetupSects] == 0 ? 4 : file[kSetupSects];  // 0: an old default
  image.loadflags = file[kLoadflags];
  image.xloadflags = Field<uint16_t>(file, kXloadflags);
  image.init_size = Field<uint32_t>(file, kInitSize);
  image.pref_address = Field<uint64_t>(file, kPrefAddress);
  image.kernel_alignment = Field<uint32_t>(file, kKernelAlignment);
  image.relocatable = file[kRelocatableKernel] != 0;
  image.cmdline_size = Field<uint32_t>(file, kCmdlineSize);
  image.initrd_addr_max = Field<uint32_t>(file, kInitrdAddrMax);
  image.kernel_offset = (uint64_t{image.setup_sects} + 1) * 512;
  image.payload_offset = Field<uint32_t>(file, kPayloadOffset);
  image.payload_length = Field<uint32_t>(file, kPayloadLength);
  image.setup_header = *std::move(header);

  if (absl::Status s = CheckFlags(image); !s.ok()) return s;
  if (absl::Status s = CheckLayout(image, file.size()); !s.ok()) return s;
  const Bytes payload =
      file.subspan(image.kernel_offset + image.payload_offset, image.payload_length);
  image.compression = IdentifyCompression(payload);
  // A compression sigvisor cannot decompress is refused before any decompressing.
  if (image.compression != Compression::kUnknown) {
    if (absl::Status s = CheckCanDecompress(image.compression); !s.ok()) return InBzImage(s);
  }
  return image;
}

absl::StatusOr<BzImage> ParseBzImage(std::span<const uint8_t> file, size_t max_vmlinux) {
  absl::StatusOr<BzImage> image = ParseSetupHeader(file);
  if (!image.ok()) return image.status();
  const Bytes payload =
      file.subspan(image->kernel_offset + image->payload_offset, image->payload_length);
  absl::StatusOr<std::vector<uint8_t>> vmlinux = Decompress(payload, max_vmlinux);
  if (!vmlinux.ok()) return InBzImage(vmlinux.status());
  if (vmlinux->size() < 4 || std::memcmp(vmlinux->data(), "\x7f" "ELF", 4) != 0) {
    return Invalid(absl::StrFormat(
        "bzImage's %s payload decompresses to %d bytes that are not an ELF vmlinux; the file "
        "is corrupt",
        CompressionName(image->compression), vmlinux->size()));
  }
  image->vmlinux = *std::move(vmlinux);
  return image;
}

}  // namespace sigvisor::linux_boot
