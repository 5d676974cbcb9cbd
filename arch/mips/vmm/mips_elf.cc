#include "arch/mips/vmm/mips_elf.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace sigvisor::mips {
namespace {

constexpr uint16_t kEtExec = 2;
constexpr uint16_t kEmMips = 8;
constexpr uint32_t kPtLoad = 1;
constexpr uint32_t kPtInterp = 3;
constexpr uint32_t kShtSymtab = 2;
constexpr uint32_t kPfX = 1;
constexpr uint32_t kPhysicalMask = 0x1fffffffu;
constexpr size_t kEhdrSize = 52;
constexpr size_t kPhdrSize = 32;
constexpr size_t kShdrSize = 40;
constexpr size_t kSymSize = 16;
constexpr uint32_t kMaxSymbols = 1 << 20;

// Bounds-checked little-endian reads: `ok` turns false on the first read past the end.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool Has(uint64_t offset, uint64_t len) const {
    return offset <= bytes_.size() && len <= bytes_.size() - offset;
  }
  uint32_t U32(uint64_t offset) { return Get(offset, 4); }
  uint16_t U16(uint64_t offset) { return static_cast<uint16_t>(Get(offset, 2)); }
  uint8_t U8(uint64_t offset) { return static_cast<uint8_t>(Get(offset, 1)); }
  bool ok() const { return ok_; }

 private:
  uint32_t Get(uint64_t offset, uint32_t size) {
    if (!Has(offset, size)) {
      ok_ = false;
      return 0;
    }
    uint32_t v = 0;
    std::memcpy(&v, bytes_.data() + offset, size);
    return v;
  }
  std::span<const uint8_t> bytes_;
  bool ok_ = true;
};

}  // namespace

absl::StatusOr<MipsElfImage> MipsElfImage::Parse(std::vector<uint8_t> bytes) {
  MipsElfImage image;
  image.bytes_ = std::move(bytes);
  Reader r(image.bytes_);
  if (!r.Has(0, kEhdrSize) || std::memcmp(image.bytes_.data(),
                                          "\x7f"
                                          "ELF",
                                          4) != 0) {
    return absl::InvalidArgumentError("not an ELF file (too short or no \\x7fELF magic)");
  }
  if (r.U8(4) != 1) return absl::InvalidArgumentError("not ELF32: a MIPS32 guest is ELF32");
  if (r.U8(5) != 1) {
    return absl::InvalidArgumentError("big-endian ELF: the MIPS target is little-endian (mipsel)");
  }
  if (r.U16(18) != kEmMips) {
    return absl::InvalidArgumentError(
        absl::StrFormat("e_machine %d is not EM_MIPS (8)", r.U16(18)));
  }
  if (r.U16(16) != kEtExec) {
    return absl::InvalidArgumentError(
        "not ET_EXEC: link the guest with -no-pie -static (Debian's gcc defaults to PIE)");
  }
  image.entry_ = r.U32(24);
  const uint32_t phoff = r.U32(28), shoff = r.U32(32);
  const uint16_t phentsize = r.U16(42), phnum = r.U16(44);
  const uint16_t shentsize = r.U16(46), shnum = r.U16(48);
  if (phnum == 0) return absl::InvalidArgumentError("no program headers");
  if (phentsize < kPhdrSize || !r.Has(phoff, uint64_t{phentsize} * phnum)) {
    return absl::InvalidArgumentError("the program header table lies outside the file");
  }
  for (uint32_t i = 0; i < phnum; ++i) {
    const uint64_t ph = phoff + uint64_t{i} * phentsize;
    const uint32_t type = r.U32(ph);
    if (type == kPtInterp) {
      return absl::InvalidArgumentError("dynamically linked (PT_INTERP): link with -static");
    }
    if (type != kPtLoad) continue;
    MipsSegment seg;
    seg.offset = r.U32(ph + 4);
    seg.vaddr = r.U32(ph + 8);
    seg.paddr = r.U32(ph + 12) & kPhysicalMask;
    seg.filesz = r.U32(ph + 16);
    seg.memsz = r.U32(ph + 20);
    seg.flags = r.U32(ph + 24);
    if (seg.filesz > seg.memsz) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "segment %d: p_filesz %#x exceeds p_memsz %#x", i, seg.filesz, seg.memsz));
    }
    if (!r.Has(seg.offset, seg.filesz)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "segment %d: file bytes [%#x, +%#x) lie outside the file", i, seg.offset, seg.filesz));
    }
    if (uint64_t{seg.vaddr} + seg.memsz > (uint64_t{1} << 32)) {
      return absl::InvalidArgumentError(absl::StrFormat("segment %d wraps around 2^32", i));
    }
    for (const MipsSegment& other : image.segments_) {
      if (seg.paddr < other.paddr + other.memsz && other.paddr < seg.paddr + seg.memsz) {
        return absl::InvalidArgumentError(
            absl::StrFormat("segment %d overlaps another in physical memory at %#x", i, seg.paddr));
      }
    }
    image.load_end_ = std::max<uint64_t>(image.load_end_, seg.paddr + seg.memsz);
    image.segments_.push_back(seg);
  }
  if (!r.ok()) return absl::InvalidArgumentError("truncated program header");
  if (image.segments_.empty()) return absl::InvalidArgumentError("no PT_LOAD segment");
  bool entry_ok = false;
  for (const MipsSegment& seg : image.segments_) {
    entry_ok |= (seg.flags & kPfX) != 0 && image.entry_ >= seg.vaddr &&
                image.entry_ - seg.vaddr < seg.memsz;
  }
  if (!entry_ok || (image.entry_ & 3) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the entry point %#x is not an aligned address in an executable segment", image.entry_));
  }

  // Symbols are optional: a malformed or absent table only loses names.
  if (shoff != 0 && shentsize >= kShdrSize && r.Has(shoff, uint64_t{shentsize} * shnum)) {
    for (uint32_t i = 0; i < shnum; ++i) {
      const uint64_t sh = shoff + uint64_t{i} * shentsize;
      if (r.U32(sh + 4) != kShtSymtab) continue;
      const uint32_t sym_off = r.U32(sh + 16), sym_size = r.U32(sh + 20), link = r.U32(sh + 24);
      if (link >= shnum) break;
      const uint64_t strsh = shoff + uint64_t{link} * shentsize;
      const uint32_t str_off = r.U32(strsh + 16), str_size = r.U32(strsh + 20);
      if (!r.Has(sym_off, sym_size) || !r.Has(str_off, str_size)) break;
      const uint32_t count = std::min<uint32_t>(sym_size / kSymSize, kMaxSymbols);
      for (uint32_t s = 0; s < count; ++s) {
        const uint64_t sym = sym_off + uint64_t{s} * kSymSize;
        const uint32_t name = r.U32(sym), value = r.U32(sym + 4), size = r.U32(sym + 8);
        const uint8_t type = r.U8(sym + 12) & 0xf;
        if ((type != 2 && type != 0) || value == 0 || name >= str_size) continue;  // FUNC/NOTYPE
        const char* text = reinterpret_cast<const char*>(image.bytes_.data() + str_off + name);
        const std::string label(text, strnlen(text, str_size - name));
        if (label.empty() || label[0] == '$') continue;
        image.functions_.emplace(value, std::make_pair(label, size));
      }
      break;
    }
  }
  return image;
}

absl::Status MipsElfImage::Load(GuestMemory& memory) const {
  for (const MipsSegment& seg : segments_) {
    if (!memory.Contains(seg.paddr, seg.memsz)) {
      return absl::OutOfRangeError(absl::StrFormat(
          "the segment at physical %#x (%#x bytes) does not fit the guest's %d MiB of RAM",
          seg.paddr, seg.memsz, memory.size() >> 20));
    }
    std::span<const uint8_t> file(bytes_.data() + seg.offset, seg.filesz);
    if (absl::Status s = memory.Write(seg.paddr, file); !s.ok()) return s;
    if (absl::Status s = memory.Fill(seg.paddr + seg.filesz, 0, seg.memsz - seg.filesz); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

std::string MipsElfImage::Symbolize(uint32_t vaddr) const {
  auto it = functions_.upper_bound(vaddr);
  if (it != functions_.begin()) {
    --it;
    const uint32_t offset = vaddr - it->first;
    if (it->second.second == 0 ? offset < 0x10000 : offset < it->second.second) {
      return offset == 0 ? it->second.first : absl::StrFormat("%s+%#x", it->second.first, offset);
    }
  }
  return absl::StrFormat("%#x", vaddr);
}

}  // namespace sigvisor::mips
