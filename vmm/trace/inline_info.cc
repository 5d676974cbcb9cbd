#include "vmm/trace/inline_info.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace sigvisor::trace {
namespace {

// DWARF constants (DWARF 5, section 7).
constexpr uint64_t kTagInlinedSubroutine = 0x1d;
constexpr uint64_t kAtName = 0x03;
constexpr uint64_t kAtLowPc = 0x11;
constexpr uint64_t kAtHighPc = 0x12;
constexpr uint64_t kAtRanges = 0x55;
constexpr uint64_t kAtAbstractOrigin = 0x31;
constexpr uint64_t kAtSpecification = 0x47;

enum Form : uint64_t {
  kAddr = 0x01, kBlock2 = 0x03, kBlock4 = 0x04, kData2 = 0x05, kData4 = 0x06, kData8 = 0x07,
  kString = 0x08, kBlock = 0x09, kBlock1 = 0x0a, kData1 = 0x0b, kFlag = 0x0c, kSdata = 0x0d,
  kStrp = 0x0e, kUdata = 0x0f, kRefAddr = 0x10, kRef1 = 0x11, kRef2 = 0x12, kRef4 = 0x13,
  kRef8 = 0x14, kRefUdata = 0x15, kIndirect = 0x16, kSecOffset = 0x17, kExprloc = 0x18,
  kFlagPresent = 0x19, kStrx = 0x1a, kRefSup4 = 0x1c, kStrpSup = 0x1d, kData16 = 0x1e,
  kLineStrp = 0x1f, kRefSig8 = 0x20, kImplicitConst = 0x21, kLoclistx = 0x22,
  kRnglistx = 0x23, kRefSup8 = 0x24, kStrx1 = 0x25, kStrx2 = 0x26, kStrx3 = 0x27,
  kStrx4 = 0x28, kAddrx = 0x1b, kAddrx1 = 0x29, kAddrx2 = 0x2a, kAddrx3 = 0x2b,
  kAddrx4 = 0x2c,
};

// A bounds-checked little-endian cursor; any overrun sets `bad` and reads zeros.
struct Reader {
  std::span<const uint8_t> data;
  size_t at = 0;
  bool bad = false;

  bool Has(size_t n) const { return !bad && n <= data.size() && at <= data.size() - n; }
  uint64_t Fixed(size_t n) {
    if (!Has(n)) {
      bad = true;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{data[at + i]} << (8 * i);
    at += n;
    return v;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint64_t b = Fixed(1);
      if (bad) return 0;
      v |= (b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    bad = true;
    return 0;
  }
  int64_t Sleb() {
    int64_t v = 0;
    int shift = 0;
    uint64_t b = 0;
    do {
      b = Fixed(1);
      if (bad) return 0;
      if (shift < 64) v |= static_cast<int64_t>(b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -(int64_t{1} << shift);
    return v;
  }
  std::string_view CString() {
    if (bad || at >= data.size()) {
      bad = true;
      return {};
    }
    const auto* begin = reinterpret_cast<const char*>(data.data() + at);
    const size_t len = strnlen(begin, data.size() - at);
    if (len == data.size() - at) {
      bad = true;
      return {};
    }
    at += len + 1;
    return {begin, len};
  }
  void Skip(uint64_t n) {
    if (!Has(n)) {
      bad = true;
      return;
    }
    at += n;
  }
};

std::string_view StringAt(std::span<const uint8_t> section, uint64_t offset) {
  Reader r{section, 0};
  if (offset >= section.size()) return {};
  r.at = offset;
  return r.CString();
}

// The named sections of an ELF64 little-endian file (bounds-checked).
std::map<std::string, std::span<const uint8_t>> Sections(std::span<const uint8_t> elf) {
  std::map<std::string, std::span<const uint8_t>> out;
  if (elf.size() < sizeof(Elf64_Ehdr) || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0 ||
      elf[EI_CLASS] != ELFCLASS64 || elf[EI_DATA] != ELFDATA2LSB) {
    return out;
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof(eh));
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > elf.size() ||
      uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > elf.size() - eh.e_shoff ||
      eh.e_shstrndx >= eh.e_shnum) {
    return out;
  }
  auto header = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, elf.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(sh));
    return sh;
  };
  const Elf64_Shdr names = header(eh.e_shstrndx);
  if (names.sh_offset > elf.size() || names.sh_size > elf.size() - names.sh_offset) return out;
  const std::span<const uint8_t> strtab = elf.subspan(names.sh_offset, names.sh_size);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = header(i);
    if (sh.sh_type == SHT_NOBITS || sh.sh_offset > elf.size() ||
        sh.sh_size > elf.size() - sh.sh_offset) {
      continue;
    }
    out.emplace(std::string(StringAt(strtab, sh.sh_name)), elf.subspan(sh.sh_offset, sh.sh_size));
  }
  return out;
}

struct AttrSpec {
  uint64_t name;
  uint64_t form;
  int64_t implicit_const;
};
struct Abbrev {
  uint64_t tag = 0;
  bool children = false;
  std::vector<AttrSpec> attrs;
};

std::unordered_map<uint64_t, Abbrev> ReadAbbrevs(std::span<const uint8_t> section, uint64_t offset) {
  std::unordered_map<uint64_t, Abbrev> table;
  Reader r{section, 0};
  if (offset >= section.size()) return table;
  r.at = offset;
  while (!r.bad) {
    const uint64_t code = r.Uleb();
    if (code == 0 || r.bad) break;
    Abbrev a;
    a.tag = r.Uleb();
    a.children = r.Fixed(1) != 0;
    for (;;) {
      AttrSpec spec{r.Uleb(), r.Uleb(), 0};
      if (r.bad || (spec.name == 0 && spec.form == 0)) break;
      if (spec.form == kImplicitConst) spec.implicit_const = r.Sleb();
      a.attrs.push_back(spec);
    }
    table.emplace(code, std::move(a));
  }
  return table;
}

struct Unit {
  bool dwarf64 = false;
  int version = 0;
  int address_size = 8;
  uint64_t offset = 0;  // of the unit header in .debug_info
};

struct AttrValue {
  uint64_t u = 0;          // constants, addresses, offsets, references (unit-relative)
  std::string_view str;    // strings
  bool is_string = false;
  bool is_ref = false;     // a reference: `u` is an absolute .debug_info offset
};

// Reads one attribute value of `form`; false if the form is not understood.
bool ReadForm(Reader& r, uint64_t form, const Unit& unit, int64_t implicit_const,
              const std::map<std::string, std::span<const uint8_t>>& sections, AttrValue& v) {
  const size_t offset_size = unit.dwarf64 ? 8 : 4;
  auto section = [&](const char* name) {
    auto it = sections.find(name);
    return it == sections.end() ? std::span<const uint8_t>() : it->second;
  };
  switch (form) {
    case kAddr: v.u = r.Fixed(unit.address_size); return true;
    case kData1: case kRef1: case kFlag: case kStrx1: case kAddrx1: v.u = r.Fixed(1); break;
    case kData2: case kRef2: case kStrx2: case kAddrx2: v.u = r.Fixed(2); break;
    case kStrx3: case kAddrx3: v.u = r.Fixed(3); break;
    case kData4: case kRef4: case kStrx4: case kAddrx4: case kRefSup4: v.u = r.Fixed(4); break;
    case kData8: case kRef8: case kRefSig8: case kRefSup8: v.u = r.Fixed(8); break;
    case kData16: r.Skip(16); break;
    case kSdata: v.u = static_cast<uint64_t>(r.Sleb()); break;
    case kUdata: case kRefUdata: case kStrx: case kAddrx: case kLoclistx: case kRnglistx:
      v.u = r.Uleb();
      break;
    case kString: v.str = r.CString(); v.is_string = true; break;
    case kStrp: case kLineStrp: case kStrpSup: {
      const uint64_t at = r.Fixed(offset_size);
      if (form != kStrpSup) {
        v.str = StringAt(section(form == kStrp ? ".debug_str" : ".debug_line_str"), at);
        v.is_string = true;
      }
      break;
    }
    case kRefAddr: case kSecOffset: v.u = r.Fixed(offset_size); break;
    case kExprloc: case kBlock: r.Skip(r.Uleb()); break;
    case kBlock1: r.Skip(r.Fixed(1)); break;
    case kBlock2: r.Skip(r.Fixed(2)); break;
    case kBlock4: r.Skip(r.Fixed(4)); break;
    case kFlagPresent: v.u = 1; break;
    case kImplicitConst: v.u = static_cast<uint64_t>(implicit_const); break;
    case kIndirect: return ReadForm(r, r.Uleb(), unit, implicit_const, sections, v);
    default: return false;
  }
  if (form == kRef1 || form == kRef2 || form == kRef4 || form == kRef8 || form == kRefUdata) {
    v.u += unit.offset;
    v.is_ref = true;
  } else if (form == kRefAddr) {
    v.is_ref = true;
  }
  return !r.bad;
}

// [begin, end) pairs of a DW_AT_ranges list.
std::vector<std::pair<uint64_t, uint64_t>> ReadRanges(
    const std::map<std::string, std::span<const uint8_t>>& sections, const Unit& unit,
    uint64_t offset, uint64_t base) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (unit.version >= 5) {
    auto it = sections.find(".debug_rnglists");
    if (it == sections.end() || offset >= it->second.size()) return out;
    Reader r{it->second, offset};
    for (int guard = 0; guard < 4096 && !r.bad; ++guard) {
      switch (r.Fixed(1)) {
        case 0: return out;  // DW_RLE_end_of_list
        case 4: {            // offset_pair
          const uint64_t b = r.Uleb(), e = r.Uleb();
          out.emplace_back(base + b, base + e);
          break;
        }
        case 5: base = r.Fixed(unit.address_size); break;  // base_address
        case 6: {                                           // start_end
          const uint64_t b = r.Fixed(unit.address_size), e = r.Fixed(unit.address_size);
          out.emplace_back(b, e);
          break;
        }
        case 7: {  // start_length
          const uint64_t b = r.Fixed(unit.address_size), n = r.Uleb();
          out.emplace_back(b, b + n);
          break;
        }
        default: return out;  // *x forms need .debug_addr: not emitted by -g1 builds
      }
    }
    return out;
  }
  auto it = sections.find(".debug_ranges");
  if (it == sections.end() || offset >= it->second.size()) return out;
  Reader r{it->second, offset};
  while (!r.bad) {
    const uint64_t b = r.Fixed(unit.address_size), e = r.Fixed(unit.address_size);
    if (r.bad || (b == 0 && e == 0)) break;
    if (b == ~0ull) {
      base = e;
      continue;
    }
    out.emplace_back(base + b, base + e);
  }
  return out;
}

}  // namespace

InlineInfo InlineInfo::FromElf(std::span<const uint8_t> elf) {
  InlineInfo result;
  const std::map<std::string, std::span<const uint8_t>> sections = Sections(elf);
  auto info_it = sections.find(".debug_info");
  auto abbrev_it = sections.find(".debug_abbrev");
  if (info_it == sections.end() || abbrev_it == sections.end()) return result;
  const std::span<const uint8_t> info = info_it->second;

  struct Named {
    std::string_view name;
    uint64_t origin = 0;  // abstract_origin or specification, absolute; 0 if none
  };
  std::unordered_map<uint64_t, Named> dies;  // every DIE that names or points to a name
  struct Pending {
    uint64_t origin;
    int depth;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
  };
  std::vector<Pending> inlined;

  Reader r{info, 0};
  while (r.Has(11)) {
    Unit unit;
    unit.offset = r.at;
    uint64_t length = r.Fixed(4);
    if (length == 0xffffffff) {
      unit.dwarf64 = true;
      length = r.Fixed(8);
    }
    const size_t unit_end_guess = r.at;
    if (!r.Has(length)) break;
    const size_t unit_end = unit_end_guess + length;
    unit.version = static_cast<int>(r.Fixed(2));
    uint64_t abbrev_offset = 0;
    if (unit.version >= 5) {
      const uint64_t unit_type = r.Fixed(1);
      unit.address_size = static_cast<int>(r.Fixed(1));
      abbrev_offset = r.Fixed(unit.dwarf64 ? 8 : 4);
      if (unit_type != 1 && unit_type != 3) {  // only compile/partial units
        r.at = unit_end;
        continue;
      }
    } else if (unit.version >= 2) {
      abbrev_offset = r.Fixed(unit.dwarf64 ? 8 : 4);
      unit.address_size = static_cast<int>(r.Fixed(1));
    } else {
      break;
    }
    if (r.bad || (unit.address_size != 4 && unit.address_size != 8)) break;
    const std::unordered_map<uint64_t, Abbrev> abbrevs =
        ReadAbbrevs(abbrev_it->second, abbrev_offset);
    Reader die{info.first(unit_end), r.at};
    int depth = 0;
    uint64_t unit_base = 0;
    bool ok = true;
    while (ok && die.at < unit_end && !die.bad) {
      const uint64_t offset = die.at;
      const uint64_t code = die.Uleb();
      if (code == 0) {
        if (--depth < 0) break;
        continue;
      }
      auto a = abbrevs.find(code);
      if (a == abbrevs.end()) {
        ok = false;
        break;
      }
      Named named;
      std::optional<uint64_t> low, high, ranges;
      bool high_is_length = false;
      for (const AttrSpec& spec : a->second.attrs) {
        AttrValue v;
        if (!ReadForm(die, spec.form, unit, spec.implicit_const, sections, v)) {
          ok = false;
          break;
        }
        switch (spec.name) {
          case kAtName:
            if (v.is_string) named.name = v.str;
            break;
          case kAtAbstractOrigin:
          case kAtSpecification:
            if (v.is_ref) named.origin = v.u;
            break;
          case kAtLowPc: low = v.u; break;
          case kAtHighPc:
            high = v.u;
            high_is_length = spec.form != kAddr;
            break;
          case kAtRanges:
            if (spec.form == kSecOffset) ranges = v.u;
            break;
          default: break;
        }
      }
      if (!ok) break;
      if (depth == 0 && low) unit_base = *low;  // the unit's base address
      if (!named.name.empty() || named.origin != 0) dies.emplace(offset, named);
      if (a->second.tag == kTagInlinedSubroutine && named.origin != 0) {
        Pending p{named.origin, depth, {}};
        if (low && high) p.ranges.emplace_back(*low, high_is_length ? *low + *high : *high);
        if (ranges) p.ranges = ReadRanges(sections, unit, *ranges, unit_base);
        if (!p.ranges.empty()) inlined.push_back(std::move(p));
      }
      if (a->second.children) ++depth;
    }
    r.at = unit_end;
  }

  for (const Pending& p : inlined) {
    std::string_view name;
    uint64_t at = p.origin;
    for (int hop = 0; hop < 4 && name.empty(); ++hop) {
      auto it = dies.find(at);
      if (it == dies.end()) break;
      name = it->second.name;
      at = it->second.origin;
    }
    if (name.empty()) continue;
    for (auto [begin, end] : p.ranges) {
      if (end > begin) result.ranges_.push_back(Range{begin, end, p.depth, std::string(name)});
    }
  }
  std::sort(result.ranges_.begin(), result.ranges_.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  return result;
}

std::vector<std::string> InlineInfo::InlinedAt(uint64_t address) const {
  std::vector<const Range*> hits;
  for (const Range& range : ranges_) {
    if (range.begin > address) break;
    if (address < range.end) hits.push_back(&range);
  }
  std::stable_sort(hits.begin(), hits.end(),
                   [](const Range* a, const Range* b) { return a->depth < b->depth; });
  std::vector<std::string> names;
  for (const Range* hit : hits) names.push_back(hit->name);
  return names;
}

}  // namespace sigvisor::trace
