#include "vmm/loader/linux/kallsyms.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace sigvisor::linux_boot {
namespace {

using Bytes = std::span<const uint8_t>;

static_assert(std::endian::native == std::endian::little,
              "x86-64's tables are little-endian and read by memcpy");

constexpr size_t kTokens = 256;
constexpr size_t kTokenIndexBytes = kTokens * sizeof(uint16_t);
// kallsyms_markers has one entry (the names' offset) per this many symbols.
constexpr size_t kPerMarker = 256;
// The token index's entries are u16 offsets: a table is at most this long, plus its
// last token.
constexpr size_t kMaxTokenTableBytes = size_t{1} << 17;
// Tokens per name: in a real table each token a name uses stands for one character or
// more (an empty token is a slot no name uses), so there are no more than characters.
constexpr size_t kMaxEncodedName = kMaxKallsymsNameLength;
// How far before the last marker's name kallsyms_num_syms may be: the last marker's
// names (at most kPerMarker of them, each at most 2 + kMaxEncodedName bytes), its
// alignment, and num_syms itself with its padding.
constexpr size_t kNumSymsWindow = kPerMarker * (2 + kMaxEncodedName) + 16;
// Candidates looked at before giving up: a kernel has one token table and one set of
// markers that fit it; a file with thousands is built to make the search slow.
constexpr int kMaxTokenTables = 16;
constexpr int kMaxMarkerCandidates = 64;
// Steps of the whole search (a table's byte, word or name looked at): Debian 6.1's
// tables take 380,000, a kernel with kMaxKallsyms symbols some tens of millions; a
// crafted file is refused after this many, in well under a second.
constexpr int64_t kSearchBudget = int64_t{1} << 27;

// The bytes of one loaded range and the virtual address of their first: the tables'
// `.balign 8` aligns addresses, which a segment's file offset need not share.
class Region {
 public:
  Region(uint64_t vaddr, Bytes bytes) : vaddr_(vaddr), bytes_(bytes) {}

  size_t size() const { return bytes_.size(); }
  const uint8_t* data() const { return bytes_.data(); }
  uint64_t Vaddr(size_t offset) const { return vaddr_ + offset; }
  bool Has(size_t offset, size_t n) const {
    return offset <= bytes_.size() && n <= bytes_.size() - offset;
  }
  // A value at `offset` the caller has checked with Has.
  template <typename T>
  T At(size_t offset) const {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  bool Aligned(size_t offset) const { return Vaddr(offset) % 8 == 0; }
  size_t AlignUp(size_t offset) const { return offset + (8 - Vaddr(offset) % 8) % 8; }
  // The caller checks that Vaddr(offset) % 8 <= offset.
  size_t AlignDown(size_t offset) const { return offset - Vaddr(offset) % 8; }
  // [begin, end) is inside and all zero: `.balign` pads .rodata with zeros.
  bool Zero(size_t begin, size_t end) const {
    if (begin > end || !Has(begin, end - begin)) return false;
    return std::all_of(bytes_.begin() + begin, bytes_.begin() + end,
                       [](uint8_t b) { return b == 0; });
  }

 private:
  uint64_t vaddr_;
  Bytes bytes_;
};

size_t RoundUp8(size_t n) { return (n + 7) / 8 * 8; }

// The search's state: the work left, and the most specific reason no tables decoded
// (a later stage's reason says more than an earlier one's).
class Search {
 public:
  bool Spend(int64_t steps) {
    budget_ -= steps;
    return budget_ >= 0;
  }
  bool exhausted() const { return budget_ < 0; }
  void Fail(int stage, std::string message) {
    if (stage > stage_) {
      stage_ = stage;
      message_ = std::move(message);
    }
  }
  absl::Status Error() const {
    if (exhausted()) {
      return absl::InvalidArgumentError(
          "vmlinux: gave up searching for kallsyms tables (too many candidates: a file built "
          "to be slow?)");
    }
    if (stage_ == 0) {
      return absl::NotFoundError(
          "vmlinux: no kallsyms tables found (a kernel built without CONFIG_KALLSYMS?)");
    }
    return absl::InvalidArgumentError(message_);
  }

 private:
  int64_t budget_ = kSearchBudget;
  int stage_ = 0;
  std::string message_;
};

// Stages a candidate reached, for Search::Fail.
enum Stage : int {
  kDigitRun = 1,    // "0" .. "9" as consecutive tokens, but no index fits them
  kTokenTable = 2,  // a token table and its index, but no names fit them
  kNames = 3,       // names, markers and num_syms, but no addresses in order
  kAddresses = 4,   // all the tables, but a name does not expand
};

struct TokenTable {
  size_t table = 0;  // kallsyms_token_table
  size_t index = 0;  // kallsyms_token_index
  std::array<std::string_view, kTokens> tokens;
};

// The token table whose tokens '0'..'9' are the run at `digits`: the tokens from '0'
// on are read forward to the table's end, the token index follows (8-aligned), and its
// entry for '0' says where the table begins. Every entry must then be where the
// tokens are: 256 NUL-terminated strings, back to back.
std::optional<TokenTable> TokenTableAt(const Region& r, size_t digits, Search& search) {
  size_t at = digits;
  const size_t limit = std::min(r.size(), digits + kMaxTokenTableBytes);
  for (size_t i = '0'; i < kTokens; ++i) {
    const void* nul = at < limit ? std::memchr(r.data() + at, 0, limit - at) : nullptr;
    if (nul == nullptr) {
      (void)search.Spend(static_cast<int64_t>(limit - digits));
      return std::nullopt;
    }
    at = static_cast<size_t>(static_cast<const uint8_t*>(nul) - r.data()) + 1;
  }
  if (!search.Spend(static_cast<int64_t>(at - digits + kTokens))) return std::nullopt;
  const size_t end = at;
  const size_t index = r.AlignUp(end);
  if (!r.Has(index, kTokenIndexBytes) || !r.Zero(end, index)) return std::nullopt;
  std::array<uint16_t, kTokens> offsets;
  for (size_t i = 0; i < kTokens; ++i) offsets[i] = r.At<uint16_t>(index + 2 * i);
  if (offsets[0] != 0 || offsets['0'] > digits) return std::nullopt;
  TokenTable t;
  t.table = digits - offsets['0'];
  t.index = index;
  if (!r.Aligned(t.table)) return std::nullopt;
  for (size_t i = 0; i < kTokens; ++i) {
    const size_t begin = t.table + offsets[i];
    const size_t next = i + 1 < kTokens ? t.table + offsets[i + 1] : end;
    // next <= end follows: the offsets ascend and the last token ends at `end`.
    if (next <= begin || next > end) return std::nullopt;
    const void* nul = std::memchr(r.data() + begin, 0, next - begin);
    if (nul != r.data() + next - 1) return std::nullopt;
    t.tokens[i] = std::string_view(reinterpret_cast<const char*>(r.data() + begin),
                                   next - 1 - begin);
  }
  return t;
}

struct Markers {
  size_t begin = 0;
  std::vector<uint32_t> offsets;  // into kallsyms_names, one per kPerMarker symbols
  uint32_t num_syms = 0;          // known from kallsyms_seqs_of_names' size; 0 if not
};

// Each candidate for the markers goes to one of these as soon as it is found; it says
// whether the search is over (the tables decoded, or too many candidates).
using MarkersSink = std::function<bool(Markers)>;

// Whether the markers at `begin` (count of them) ascend from 0, as name offsets do.
bool ReadMarkers(const Region& r, size_t begin, size_t count, Search& search,
                 std::vector<uint32_t>* out) {
  if (!r.Has(begin, count * 4) || !search.Spend(static_cast<int64_t>(count))) return false;
  out->resize(count);
  for (size_t k = 0; k < count; ++k) {
    (*out)[k] = r.At<uint32_t>(begin + 4 * k);
    if (k == 0 ? (*out)[k] != 0 : (*out)[k] <= (*out)[k - 1]) return false;
  }
  return true;
}

// kallsyms_markers right before the token table (up to 6.1, and 6.4 on): walked back
// from the table, descending to the 0 of the first name. The array is 8-aligned and
// padded to 8 with one zero word when its count is odd.
bool MarkersBefore(const Region& r, size_t table, Search& search, const MarkersSink& sink) {
  for (size_t pad : {size_t{0}, size_t{4}}) {
    if (table < pad || (pad == 4 && r.At<uint32_t>(table - 4) != 0)) continue;
    size_t at = table - pad;
    size_t count = 0;
    uint32_t above = 0;  // the marker after the one read (0: none yet)
    bool found = false;
    while (at >= 4 && count <= kMaxKallsyms / kPerMarker && search.Spend(1)) {
      at -= 4;
      ++count;
      const uint32_t value = r.At<uint32_t>(at);
      if (value == 0) {
        found = true;
        break;
      }
      if (above != 0 && value >= above) break;
      above = value;
    }
    if (!found || !r.Aligned(at) || (count * 4 + pad) % 8 != 0) continue;
    Markers m{.begin = at};
    if (ReadMarkers(r, at, count, search, &m.offsets) && sink(std::move(m))) return true;
  }
  return false;
}

// kallsyms_markers followed by kallsyms_seqs_of_names (Linux 6.2 and 6.3, and 6.1.y
// from 6.1.x stable backports): num_syms 3-byte big-endian indices, each below
// num_syms, 8-aligned and padded with zeros to the token table. The count is not
// stored there, so each count that fits the bytes before the table is tried, the cheap
// checks (a marker 0 where the markers would begin, zero padding) first.
bool MarkersAndSeqsBefore(const Region& r, size_t table, Search& search,
                          const MarkersSink& sink) {
  for (size_t n = 1; n <= kMaxKallsyms; ++n) {
    if (!search.Spend(1)) return true;
    const size_t seqs_bytes = RoundUp8(3 * n);
    const size_t count = (n + kPerMarker - 1) / kPerMarker;
    const size_t markers_bytes = RoundUp8(4 * count);
    if (seqs_bytes + markers_bytes > table) return false;  // larger counts fit no better
    const size_t seqs = table - seqs_bytes;
    const size_t begin = seqs - markers_bytes;
    if (r.At<uint32_t>(begin) != 0) continue;
    if (count > 1 && r.At<uint32_t>(begin + 4) == 0) continue;
    if (!r.Zero(seqs + 3 * n, table) || !r.Zero(begin + 4 * count, seqs)) continue;
    Markers m{.begin = begin, .num_syms = static_cast<uint32_t>(n)};
    if (!ReadMarkers(r, begin, count, search, &m.offsets)) continue;
    if (!search.Spend(static_cast<int64_t>(n))) return true;
    bool indices = true;
    for (size_t i = 0; i < n && indices; ++i) {
      const uint8_t* p = r.data() + seqs + 3 * i;
      indices = (uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2]) < n;
    }
    if (indices && sink(std::move(m))) return true;
  }
  return false;
}

// The length of the encoded name at `at` (one byte, or two for a "big" symbol: ULEB128,
// Linux 6.1 on) and where its tokens begin; nullopt if it does not fit before `end`.
std::optional<std::pair<size_t, size_t>> NameAt(const Region& r, size_t at, size_t end) {
  if (at >= end) return std::nullopt;
  size_t length = r.At<uint8_t>(at++);
  if ((length & 0x80) != 0) {
    if (at >= end) return std::nullopt;
    length = (length & 0x7f) | size_t{r.At<uint8_t>(at++)} << 7;
  }
  if (length == 0 || length > kMaxEncodedName || length > end - at) return std::nullopt;
  return std::make_pair(length, at);
}

// Whether `num_syms` names from `begin` end right before the markers (padding to 8
// with zeros) with every kPerMarker-th name where its marker says.
bool NamesFit(const Region& r, size_t begin, uint32_t num_syms, const Markers& m,
              Search& search) {
  size_t at = begin;
  for (uint32_t i = 0; i < num_syms; ++i) {
    if (i % kPerMarker == 0) {
      if (at - begin != m.offsets[i / kPerMarker] || !search.Spend(kPerMarker)) return false;
    }
    const auto name = NameAt(r, at, m.begin);
    if (!name) return false;
    at = name->second + name->first;
  }
  return r.AlignUp(at) == m.begin && r.Zero(at, m.begin);
}

struct Names {
  size_t num_syms_at = 0;  // kallsyms_num_syms; kallsyms_names 8 bytes on
  uint32_t num_syms = 0;
};

// kallsyms_num_syms and the names after it, for markers `m`: num_syms is a u32 at an
// 8-aligned address (its upper half the padding to the names), in the range the
// number of markers allows, close enough before the last marker's name.
std::optional<Names> NamesBefore(const Region& r, const Markers& m, Search& search) {
  const size_t count = m.offsets.size();
  const size_t last = m.offsets.back();
  if (m.begin < last + 8) return std::nullopt;
  const size_t below = m.begin - last - 8;
  if (r.Vaddr(below) % 8 > below) return std::nullopt;
  const size_t highest = r.AlignDown(below);
  const size_t lowest = highest > kNumSymsWindow ? highest - kNumSymsWindow : 0;
  const uint64_t min_syms = (count - 1) * kPerMarker + 1, max_syms = count * kPerMarker;
  for (size_t at = highest; at >= lowest && at + 8 <= r.size(); at -= 8) {
    if (!search.Spend(1)) return std::nullopt;
    const uint32_t n = r.At<uint32_t>(at);
    if (n >= min_syms && n <= max_syms && (m.num_syms == 0 || n == m.num_syms) &&
        r.At<uint32_t>(at + 4) == 0 && NamesFit(r, at + 8, n, m, search)) {
      return Names{.num_syms_at = at, .num_syms = n};
    }
    if (at < 8) break;
  }
  return std::nullopt;
}

// The addresses from kallsyms_offsets at `offsets` and kallsyms_relative_base at
// `base`, if they ascend as kernel/kallsyms.c's binary search needs them:
//  - with CONFIG_KALLSYMS_ABSOLUTE_PERCPU (x86-64 with SMP, as Debian's), an offset >= 0 is an
//    absolute value (the per-CPU symbols, addresses from 0), a negative one is
//    relative_base - 1 - offset, and relative_base is the first non-absolute symbol's
//    address, so the first negative offset is -1;
//  - without it, every offset is an unsigned distance from relative_base, the first
//    symbol's address, so the first offset is 0.
// A table with a negative offset is the first kind; one without, the second.
std::optional<std::vector<uint64_t>> AddressesAt(const Region& r, size_t offsets, size_t base,
                                                 uint32_t num_syms, Search& search) {
  if (!r.Has(offsets, size_t{4} * num_syms) || !r.Has(base, 8) ||
      !r.Zero(offsets + size_t{4} * num_syms, base) || !search.Spend(num_syms)) {
    return std::nullopt;
  }
  const uint64_t relative_base = r.At<uint64_t>(base);
  std::optional<size_t> first_negative;
  for (uint32_t i = 0; i < num_syms && !first_negative; ++i) {
    if (r.At<int32_t>(offsets + 4 * i) < 0) first_negative = i;
  }
  if (first_negative ? r.At<int32_t>(offsets + 4 * *first_negative) != -1
                     : r.At<int32_t>(offsets) != 0) {
    return std::nullopt;
  }
  std::vector<uint64_t> addresses(num_syms);
  for (uint32_t i = 0; i < num_syms; ++i) {
    const int32_t offset = r.At<int32_t>(offsets + 4 * i);
    if (!first_negative) {
      addresses[i] = relative_base + static_cast<uint32_t>(offset);
    } else if (offset >= 0) {
      addresses[i] = static_cast<uint64_t>(offset);
    } else {
      // -1 - offset is at most 2^31 - 1: no overflow in int64.
      addresses[i] = relative_base + static_cast<uint64_t>(-1 - int64_t{offset});
    }
    if (i > 0 && addresses[i] < addresses[i - 1]) return std::nullopt;
  }
  // All at one address is a run of zeros (or of one value) read as a table.
  if (num_syms > 1 && addresses.front() == addresses.back()) return std::nullopt;
  return addresses;
}

// The offsets and relative base for names at `names`: before kallsyms_num_syms (up to
// Linux 6.3: offsets, relative_base, num_syms, names, ...), or after the token index
// (6.4 on: ..., token_index, offsets, relative_base, ...).
std::optional<std::vector<uint64_t>> Addresses(const Region& r, const TokenTable& t,
                                               const Names& names, Search& search) {
  const size_t offsets_bytes = RoundUp8(size_t{4} * names.num_syms);
  if (names.num_syms_at >= 8 + offsets_bytes) {
    const size_t base = names.num_syms_at - 8;
    auto before = AddressesAt(r, base - offsets_bytes, base, names.num_syms, search);
    if (before) return before;
  }
  const size_t offsets = r.AlignUp(t.index + kTokenIndexBytes);
  return AddressesAt(r, offsets, r.AlignUp(offsets + size_t{4} * names.num_syms),
                     names.num_syms, search);
}

// Every name expanded through the tokens: the first character is the type letter.
absl::StatusOr<std::vector<KallsymsSymbol>> Expand(const Region& r, const TokenTable& t,
                                                   const Names& names,
                                                   const std::vector<uint64_t>& addresses,
                                                   size_t markers) {
  std::vector<KallsymsSymbol> symbols(names.num_syms);
  size_t at = names.num_syms_at + 8;
  std::string text;
  for (uint32_t i = 0; i < names.num_syms; ++i) {
    const auto name = NameAt(r, at, markers);  // checked by NamesFit
    if (!name) return absl::InternalError("kallsyms name moved");
    text.clear();
    for (size_t k = 0; k < name->first; ++k) {
      text += t.tokens[r.At<uint8_t>(name->second + k)];
      if (text.size() > kMaxKallsymsNameLength) break;
    }
    at = name->second + name->first;
    if (text.size() > kMaxKallsymsNameLength || text.size() < 2 ||
        !absl::ascii_isalpha(static_cast<unsigned char>(text[0]))) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "vmlinux: kallsyms name %d (of %d, at 0x%x) does not expand to a type letter and a "
          "name of at most %d characters",
          i, names.num_syms, r.Vaddr(name->second), kMaxKallsymsNameLength));
    }
    symbols[i] = {.addr = addresses[i], .type = text[0], .name = text.substr(1)};
  }
  return symbols;
}

// The tables in one loaded range, if they are there (else `search` says why not).
std::optional<std::vector<KallsymsSymbol>> DecodeIn(const Region& r, Search& search) {
  // The tokens at indices '0' .. '9', NUL-terminated: each digit is in some symbol's
  // name, so scripts/kallsyms.c keeps it as a token of its own at its own code.
  static constexpr char kDigits[] = "0\0" "1\0" "2\0" "3\0" "4\0" "5\0" "6\0" "7\0" "8\0" "9";
  const std::boyer_moore_horspool_searcher digits(kDigits, kDigits + sizeof(kDigits));
  const char* const begin = reinterpret_cast<const char*>(r.data());
  const char* const end = begin + r.size();
  int tables = 0;
  for (const char* hit = std::search(begin, end, digits); hit != end && !search.exhausted();
       hit = std::search(hit + 1, end, digits)) {
    const size_t at = static_cast<size_t>(hit - begin);
    const std::optional<TokenTable> t = TokenTableAt(r, at, search);
    if (!t) {
      search.Fail(kDigitRun, absl::StrFormat(
                                 "vmlinux: kallsyms-like tokens \"0\" .. \"9\" at 0x%x, but no "
                                 "token index that fits them (corrupt tables?)",
                                 r.Vaddr(at)));
      continue;
    }
    if (++tables > kMaxTokenTables) {
      (void)search.Spend(kSearchBudget + 1);
      break;
    }
    // Each set of markers that fits, tried as it is found: the first that decodes is it.
    std::optional<std::vector<KallsymsSymbol>> decoded;
    bool named = false;
    int candidates = 0;
    const MarkersSink try_markers = [&](Markers m) {
      if (++candidates > kMaxMarkerCandidates) {
        (void)search.Spend(kSearchBudget + 1);
        return true;
      }
      const std::optional<Names> names = NamesBefore(r, m, search);
      if (!names) return search.exhausted();
      named = true;
      const std::optional<std::vector<uint64_t>> addresses = Addresses(r, *t, *names, search);
      if (!addresses) {
        search.Fail(kNames,
                    absl::StrFormat("vmlinux: kallsyms names at 0x%x (%d symbols), but no "
                                    "kallsyms_offsets and kallsyms_relative_base that put them "
                                    "in address order (corrupt tables, or a layout this reader "
                                    "does not know)",
                                    r.Vaddr(names->num_syms_at + 8), names->num_syms));
        return search.exhausted();
      }
      absl::StatusOr<std::vector<KallsymsSymbol>> symbols =
          Expand(r, *t, *names, *addresses, m.begin);
      if (symbols.ok()) {
        decoded = *std::move(symbols);
        return true;
      }
      search.Fail(kAddresses, std::string(symbols.status().message()));
      return search.exhausted();
    };
    if (!MarkersBefore(r, t->table, search, try_markers)) {
      MarkersAndSeqsBefore(r, t->table, search, try_markers);
    }
    if (decoded) return decoded;
    if (!named) {
      search.Fail(kTokenTable,
                  absl::StrFormat("vmlinux: a kallsyms token table at 0x%x, but no names, "
                                  "markers and kallsyms_num_syms that fit it before it (corrupt "
                                  "tables, or a layout this reader does not know)",
                                  r.Vaddr(t->table)));
    }
  }
  return std::nullopt;
}

struct Loaded {
  uint64_t vaddr = 0;
  Bytes bytes;
};

// The file bytes of the PT_LOAD segments of an ELF64 little-endian file.
absl::StatusOr<std::vector<Loaded>> LoadedRanges(Bytes elf) {
  Elf64_Ehdr eh;
  if (elf.size() < sizeof(eh) || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0 ||
      elf[EI_CLASS] != ELFCLASS64 || elf[EI_DATA] != ELFDATA2LSB) {
    return absl::InvalidArgumentError("vmlinux: not a little-endian ELF64 file");
  }
  std::memcpy(&eh, elf.data(), sizeof(eh));
  if (eh.e_phnum != 0 && eh.e_phentsize != sizeof(Elf64_Phdr)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("vmlinux: program headers of %d bytes (not %d)", eh.e_phentsize,
                        sizeof(Elf64_Phdr)));
  }
  const uint64_t table_bytes = uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (eh.e_phoff > elf.size() || table_bytes > elf.size() - eh.e_phoff) {
    return absl::InvalidArgumentError("vmlinux: its program headers lie outside the file");
  }
  std::vector<Loaded> ranges;
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, elf.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type != PT_LOAD || ph.p_filesz == 0) continue;
    if (ph.p_offset > elf.size() || ph.p_filesz > elf.size() - ph.p_offset) {
      return absl::InvalidArgumentError(
          absl::StrFormat("vmlinux: program header %d's bytes lie outside the file", i));
    }
    ranges.push_back({ph.p_vaddr, elf.subspan(ph.p_offset, ph.p_filesz)});
  }
  return ranges;
}

}  // namespace

absl::StatusOr<std::vector<KallsymsSymbol>> DecodeKallsyms(std::span<const uint8_t> vmlinux_elf) {
  absl::StatusOr<std::vector<Loaded>> ranges = LoadedRanges(vmlinux_elf);
  if (!ranges.ok()) return ranges.status();
  Search search;
  for (const Loaded& range : *ranges) {
    auto decoded = DecodeIn(Region(range.vaddr, range.bytes), search);
    if (decoded) return *std::move(decoded);
  }
  return search.Error();
}

absl::StatusOr<std::vector<KallsymsSymbol>> DecodeKallsymsAt(uint64_t vaddr,
                                                              std::span<const uint8_t> bytes) {
  Search search;
  auto decoded = DecodeIn(Region(vaddr, bytes), search);
  if (decoded) return *std::move(decoded);
  return search.Error();
}

// As ParseSystemMap (system_map.cc) builds its table from the map's lines, so that a
// trace names the same functions with the same reach either way.
SymbolTable KallsymsTextTable(const std::vector<KallsymsSymbol>& symbols) {
  std::vector<uint64_t> addresses;  // every entry's, to end each text symbol at the next
  addresses.reserve(symbols.size());
  std::vector<Symbol> text;
  for (const KallsymsSymbol& s : symbols) {
    addresses.push_back(s.addr);
    if (!IsNmTextType(s.type)) continue;
    text.push_back({.name = s.name,
                    .addr = s.addr,
                    .size = 0,
                    .type = STT_FUNC,
                    .binding = NmTypeBinding(s.type)});
  }
  return SymbolTable::FromTextReachingNext(std::move(text), std::move(addresses));
}

absl::StatusOr<SymbolTable> ReadKallsyms(std::span<const uint8_t> vmlinux_elf) {
  absl::StatusOr<std::vector<KallsymsSymbol>> symbols = DecodeKallsyms(vmlinux_elf);
  if (!symbols.ok()) return symbols.status();
  SymbolTable table = KallsymsTextTable(*symbols);
  if (table.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "vmlinux: its kallsyms (%d symbols) name no code (no symbol of type t, T, w or W)",
        symbols->size()));
  }
  return table;
}

}  // namespace sigvisor::linux_boot
