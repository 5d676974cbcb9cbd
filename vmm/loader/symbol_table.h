// Address -> name lookup for a guest image, for exit reports and trap diagnostics
// ("#PF at kernel_main+0x1c").
//
// Built from an ELF SHT_SYMTAB and its linked string table. Only symbols that name
// code or data are kept: STT_FUNC, STT_OBJECT, and named STT_NOTYPE symbols (the
// labels of hand-written assembly, which usually carry no .size). Undefined symbols,
// section/file symbols and absolute NOTYPE constants are dropped.
#ifndef SIGVISOR_VMM_LOADER_SYMBOL_TABLE_H_
#define SIGVISOR_VMM_LOADER_SYMBOL_TABLE_H_

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace sigvisor {

// `nm`'s one-letter symbol types, as System.map and kallsyms give them: t, T, w and W
// name code; upper case is global, lower case local, w/W weak.
inline bool IsNmTextType(char type) {
  return type == 't' || type == 'T' || type == 'w' || type == 'W';
}
inline uint8_t NmTypeBinding(char type) {
  if (type == 'w' || type == 'W') return STB_WEAK;
  return type >= 'A' && type <= 'Z' ? STB_GLOBAL : STB_LOCAL;
}

struct Symbol {
  std::string name;
  uint64_t addr = 0;
  uint64_t size = 0;             // 0 for assembly labels and symbols without .size
  uint8_t type = STT_NOTYPE;     // STT_FUNC, STT_OBJECT or STT_NOTYPE
  uint8_t binding = STB_GLOBAL;  // STB_LOCAL, STB_GLOBAL or STB_WEAK

  bool operator==(const Symbol&) const = default;
};

class SymbolTable {
 public:
  // How far past a size-0 symbol (an assembly label) an address is still
  // attributed to it.
  static constexpr uint64_t kLabelReach = 4096;

  // An empty table: every lookup misses.
  SymbolTable() = default;

  // A table of the given symbols (nameless ones are dropped).
  static SymbolTable FromSymbols(std::vector<Symbol> symbols);

  // A Linux kernel's code from a symbol list without sizes (System.map's lines, the
  // kallsyms tables): `text`, each reaching to the next higher address in
  // `every_address` (the addresses of every symbol of the list, data and absolute ones
  // included); the last is a label (size 0).
  static SymbolTable FromTextReachingNext(std::vector<Symbol> text,
                                          std::vector<uint64_t> every_address);

  // Parses the raw contents of an SHT_SYMTAB section (`symtab`, entries of
  // sizeof(Elf64_Sym)) whose names live in `strtab`. Both spans are untrusted: a
  // size that is not a whole number of entries or a name offset outside `strtab`
  // is an error, never an out-of-bounds read.
  static absl::StatusOr<SymbolTable> FromElf(std::span<const uint8_t> symtab,
                                             std::span<const uint8_t> strtab);

  // "kernel_main+0x1c" ("kernel_main" at offset 0), or "0x<addr>" if no symbol
  // covers `addr` (see Lookup).
  std::string Symbolize(uint64_t addr) const;

  // The symbol called `name`, preferring global over weak over local bindings
  // (static functions in different files may share a name).
  std::optional<Symbol> Find(std::string_view name) const;

  // The symbol `addr` belongs to, or nullptr:
  //  1. the sized symbol whose [addr, addr + size) contains it, the innermost
  //     (highest start) if several nest;
  //  2. otherwise the size-0 symbol at the nearest preceding address, if `addr` is
  //     less than kLabelReach past it. A sized symbol in between wins over a label
  //     further back, so an address in the gap after a function is a miss rather
  //     than being blamed on some earlier label.
  // Among symbols at one address, FUNC beats OBJECT beats NOTYPE, then global
  // beats weak beats local, then the name decides, so aliases resolve stably.
  // The pointer is into this table and lives as long as it does.
  const Symbol* Lookup(uint64_t addr) const;

  // All symbols, sorted by address (then by the preference above).
  const std::vector<Symbol>& symbols() const { return symbols_; }
  size_t size() const { return symbols_.size(); }
  bool empty() const { return symbols_.empty(); }

 private:
  explicit SymbolTable(std::vector<Symbol> sorted_symbols);
  const Symbol* FindContaining(uint64_t addr, size_t end) const;
  const Symbol* FindNearbyLabel(uint64_t addr, size_t end) const;

  std::vector<Symbol> symbols_;
  // max_last_[i]: the highest last byte (addr + size - 1, saturated) over the sized
  // symbols in symbols_[0..i], 0 if none. Lets the containment search stop as soon
  // as no earlier symbol can reach the address.
  std::vector<uint64_t> max_last_;
  // Indices into symbols_, sorted by (name, binding preference): for Find.
  std::vector<size_t> by_name_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LOADER_SYMBOL_TABLE_H_
