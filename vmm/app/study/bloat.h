// Linux's scripts/bloat-o-meter for two kernel images: the size of every sized
// function and object symbol in the old and the new ELF symbol table, and the
// growth, shrinkage, additions and removals between them.
#ifndef SIGVISOR_VMM_APP_STUDY_BLOAT_H_
#define SIGVISOR_VMM_APP_STUDY_BLOAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "vmm/loader/symbol_table.h"

namespace sigvisor::study {

struct BloatRow {
  std::string name;
  int64_t old_bytes = 0;  // 0: added
  int64_t new_bytes = 0;  // 0: removed
  int64_t delta() const { return new_bytes - old_bytes; }
};

struct BloatReport {
  int added = 0, removed = 0, grown = 0, shrunk = 0;
  int64_t up = 0, down = 0;  // sums of the positive and of the negative deltas
  int64_t old_total = 0, new_total = 0;  // all sized symbols
  std::vector<BloatRow> rows;  // changed symbols, largest growth first (as bloat-o-meter)
  int64_t total() const { return up + down; }
};

// Symbols of type FUNC or OBJECT with a size. Local symbols that share a name (static
// functions of different files) are summed under that name.
BloatReport CompareSymbols(const SymbolTable& old_symbols, const SymbolTable& new_symbols);

// bloat-o-meter's text: "add/remove: 0/0 grow/shrink: 3/7 up/down: 81/-538 (-457)",
// the column header and one line per changed symbol.
std::string FormatBloat(const BloatReport& report);

}  // namespace sigvisor::study

#endif  // SIGVISOR_VMM_APP_STUDY_BLOAT_H_
