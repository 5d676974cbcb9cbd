#include "vmm/loader/symbol_table.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/strings/str_format.h"
#include "vmm/loader/elf_bytes.h"

namespace sigvisor {
namespace {

// Lower ranks are preferred when several symbols share an address or a name.
int TypeRank(uint8_t type) {
  switch (type) {
    case STT_FUNC:
      return 0;
    case STT_OBJECT:
      return 1;
    default:
      return 2;
  }
}

int BindingRank(uint8_t binding) {
  switch (binding) {
    case STB_GLOBAL:
    case STB_GNU_UNIQUE:
      return 0;
    case STB_WEAK:
      return 1;
    default:
      return 2;
  }
}

bool AddressOrder(const Symbol& a, const Symbol& b) {
  return std::forward_as_tuple(a.addr, TypeRank(a.type), BindingRank(a.binding), a.name) <
         std::forward_as_tuple(b.addr, TypeRank(b.type), BindingRank(b.binding), b.name);
}

// The last byte of a sized symbol, saturated at 2^64 - 1 (untrusted sizes may run
// past the top of the address space).
uint64_t LastByte(const Symbol& s) {
  if (s.size - 1 > std::numeric_limits<uint64_t>::max() - s.addr) {
    return std::numeric_limits<uint64_t>::max();
  }
  return s.addr + (s.size - 1);
}

// Whether an ELF symbol names code or data worth symbolizing with.
bool IsInteresting(const Elf64_Sym& sym, std::string_view name) {
  if (name.empty() || sym.st_shndx == SHN_UNDEF) return false;
  switch (ELF64_ST_TYPE(sym.st_info)) {
    case STT_FUNC:
    case STT_OBJECT:
      return true;
    case STT_NOTYPE:
      // An absolute NOTYPE symbol is a constant (`.set SIZE, 4096`), not a place.
      return sym.st_shndx != SHN_ABS;
    default:
      return false;
  }
}

}  // namespace

SymbolTable::SymbolTable(std::vector<Symbol> sorted_symbols)
    : symbols_(std::move(sorted_symbols)) {
  max_last_.reserve(symbols_.size());
  uint64_t max_last = 0;
  for (const Symbol& s : symbols_) {
    if (s.size > 0) max_last = std::max(max_last, LastByte(s));
    max_last_.push_back(max_last);
  }
  by_name_.resize(symbols_.size());
  for (size_t i = 0; i < symbols_.size(); ++i) by_name_[i] = i;
  std::stable_sort(by_name_.begin(), by_name_.end(), [this](size_t a, size_t b) {
    return std::forward_as_tuple(symbols_[a].name, BindingRank(symbols_[a].binding)) <
           std::forward_as_tuple(symbols_[b].name, BindingRank(symbols_[b].binding));
  });
}

SymbolTable SymbolTable::FromTextReachingNext(std::vector<Symbol> text,
                                              std::vector<uint64_t> every_address) {
  std::sort(every_address.begin(), every_address.end());
  for (Symbol& symbol : text) {
    auto next = std::upper_bound(every_address.begin(), every_address.end(), symbol.addr);
    if (next != every_address.end()) symbol.size = *next - symbol.addr;
  }
  return FromSymbols(std::move(text));
}

SymbolTable SymbolTable::FromSymbols(std::vector<Symbol> symbols) {
  std::erase_if(symbols, [](const Symbol& s) { return s.name.empty(); });
  std::sort(symbols.begin(), symbols.end(), AddressOrder);
  return SymbolTable(std::move(symbols));
}

absl::StatusOr<SymbolTable> SymbolTable::FromElf(std::span<const uint8_t> symtab,
                                                 std::span<const uint8_t> strtab) {
  if (symtab.size() % sizeof(Elf64_Sym) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("symbol table is %d bytes, not a whole number of %d-byte entries",
                        symtab.size(), sizeof(Elf64_Sym)));
  }
  const size_t count = symtab.size() / sizeof(Elf64_Sym);
  std::vector<Symbol> symbols;
  // Entry 0 is the reserved null symbol.
  for (size_t i = 1; i < count; ++i) {
    std::optional<Elf64_Sym> sym = elf_internal::ReadStruct<Elf64_Sym>(symtab, i * sizeof(Elf64_Sym));
    if (!sym) return absl::InternalError("symbol table entry out of range");  // unreachable
    std::string_view name;
    // Every name is checked, kept or not: a bad offset means a corrupt table.
    if (sym->st_name != 0) {
      absl::StatusOr<std::string_view> s =
          elf_internal::StringAt(strtab, sym->st_name, absl::StrFormat("symbol %d name", i));
      if (!s.ok()) return s.status();
      name = *s;
    }
    if (!IsInteresting(*sym, name)) continue;
    symbols.push_back(Symbol{.name = std::string(name),
                             .addr = sym->st_value,
                             .size = sym->st_size,
                             .type = static_cast<uint8_t>(ELF64_ST_TYPE(sym->st_info)),
                             .binding = static_cast<uint8_t>(ELF64_ST_BIND(sym->st_info))});
  }
  return FromSymbols(std::move(symbols));
}

std::string SymbolTable::Symbolize(uint64_t addr) const {
  const Symbol* s = Lookup(addr);
  if (s == nullptr) return absl::StrFormat("0x%x", addr);
  const uint64_t offset = addr - s->addr;
  if (offset == 0) return s->name;
  return absl::StrFormat("%s+0x%x", s->name, offset);
}

std::optional<Symbol> SymbolTable::Find(std::string_view name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [this](size_t i, std::string_view n) { return symbols_[i].name < n; });
  if (it == by_name_.end() || symbols_[*it].name != name) return std::nullopt;
  return symbols_[*it];
}

const Symbol* SymbolTable::Lookup(uint64_t addr) const {
  // `end`: one past the last symbol starting at or below addr.
  const size_t end = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                                      [](uint64_t a, const Symbol& s) { return a < s.addr; }) -
                     symbols_.begin();
  if (end == 0) return nullptr;
  if (const Symbol* s = FindContaining(addr, end)) return s;
  return FindNearbyLabel(addr, end);
}

const Symbol* SymbolTable::FindContaining(uint64_t addr, size_t end) const {
  const Symbol* best = nullptr;
  for (size_t i = end; i-- > 0;) {
    if (max_last_[i] < addr) break;  // nothing at or before i reaches addr
    const Symbol& s = symbols_[i];
    if (best != nullptr && s.addr < best->addr) break;  // only less inner ones remain
    // s.addr <= addr here, so the subtraction cannot wrap.
    if (s.size > 0 && addr - s.addr < s.size) best = &s;  // same address: lower index preferred
  }
  return best;
}

const Symbol* SymbolTable::FindNearbyLabel(uint64_t addr, size_t end) const {
  const uint64_t nearest = symbols_[end - 1].addr;
  if (addr - nearest >= kLabelReach) return nullptr;
  // The symbols at `nearest` are [first, end), in preference order.
  const size_t first = std::lower_bound(symbols_.begin(), symbols_.begin() + end, nearest,
                                        [](const Symbol& s, uint64_t a) { return s.addr < a; }) -
                       symbols_.begin();
  for (size_t i = first; i < end; ++i) {
    if (symbols_[i].size == 0) return &symbols_[i];
  }
  return nullptr;  // only sized symbols there, and none of them contains addr
}

}  // namespace sigvisor
