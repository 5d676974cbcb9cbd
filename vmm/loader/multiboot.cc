#include "vmm/loader/multiboot.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

uint32_t Word(std::span<const uint8_t> file, uint64_t offset) {
  uint32_t value;
  std::memcpy(&value, file.data() + offset, sizeof(value));  // callers checked the range
  return value;
}

}  // namespace

absl::StatusOr<std::optional<MultibootHeader>> FindMultibootHeader(
    std::span<const uint8_t> file) {
  const uint64_t limit = std::min<uint64_t>(file.size(), kMultibootSearchBytes);
  for (uint64_t off = 0; off + 12 <= limit; off += 4) {
    if (Word(file, off) != kMultibootHeaderMagic) continue;
    const uint32_t flags = Word(file, off + 4);
    if (static_cast<uint32_t>(kMultibootHeaderMagic + flags + Word(file, off + 8)) != 0) {
      continue;
    }
    MultibootHeader header;
    header.file_offset = off;
    header.flags = flags;
    const uint32_t unknown_required = flags & 0xfff8;
    if (unknown_required != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Multiboot header at file offset %#x asks for required features %#x (flags %#x) "
          "that sigvisor does not know; it gives bits 0-2 and the address fields (bit 16)",
          off, unknown_required, flags));
    }
    if (flags & kMultibootAoutKludge) {
      if (off + 32 > file.size()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Multiboot header at file offset %#x sets the address-fields flag (bit 16) but the "
            "file ends before the fields",
            off));
      }
      header.header_addr = Word(file, off + 12);
      header.load_addr = Word(file, off + 16);
      header.load_end_addr = Word(file, off + 20);
      header.bss_end_addr = Word(file, off + 24);
      header.entry_addr = Word(file, off + 28);
    }
    return std::optional<MultibootHeader>(header);
  }
  return std::optional<MultibootHeader>();
}

absl::StatusOr<MultibootAoutLoad> MultibootAoutLayout(std::span<const uint8_t> file,
                                                      const MultibootHeader& h) {
  auto bad = [&](std::string why) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Multiboot address fields (header_addr %#x load_addr %#x load_end_addr %#x "
        "bss_end_addr %#x entry_addr %#x): %s",
        h.header_addr, h.load_addr, h.load_end_addr, h.bss_end_addr, h.entry_addr, why));
  };
  if (h.header_addr < h.load_addr) return bad("header_addr is below load_addr");
  const uint64_t header_delta = uint64_t{h.header_addr} - h.load_addr;
  if (header_delta > h.file_offset) {
    return bad(absl::StrFormat("the load would start before the file (header at offset %#x)",
                               h.file_offset));
  }
  const uint64_t start = h.file_offset - header_delta;
  uint64_t size = file.size() - start;
  if (h.load_end_addr != 0) {
    if (h.load_end_addr < h.load_addr) return bad("load_end_addr is below load_addr");
    size = uint64_t{h.load_end_addr} - h.load_addr;
    if (start + size > file.size()) {
      return bad(absl::StrFormat("the load runs past the end of the file (%d bytes)",
                                 file.size()));
    }
  }
  uint64_t memsz = size;
  if (h.bss_end_addr != 0) {
    if (uint64_t{h.bss_end_addr} < h.load_addr + size) return bad("bss_end_addr is below the load end");
    memsz = uint64_t{h.bss_end_addr} - h.load_addr;
  }
  if (uint64_t{h.load_addr} + memsz > (1ull << 32)) return bad("the load runs past 4 GiB");
  if (h.entry_addr < h.load_addr || h.entry_addr - uint64_t{h.load_addr} >= memsz) {
    return bad("entry_addr is outside the loaded range");
  }
  return MultibootAoutLoad{.load_addr = h.load_addr,
                           .bytes = file.subspan(start, size),
                           .memsz = memsz,
                           .entry = h.entry_addr};
}

}  // namespace sigvisor
