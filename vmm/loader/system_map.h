// A Linux kernel's System.map ("ffffffff81a445f0 T exc_divide_error" per line, as
// `nm -n vmlinux` prints it) as a SymbolTable: the symbols of a stripped vmlinux,
// for `sigvisor trace --symbols`.
//
// Only text symbols are kept (types t, T, w, W): the trace names code. A map gives no
// sizes, so each symbol reaches to the next higher address that any line of the map
// names (data, absolute and per-CPU symbols included), and the last one is a label
// (size 0, SymbolTable::kLabelReach). Upper case is global, lower case local, w/W weak.
#ifndef SIGVISOR_VMM_LOADER_SYSTEM_MAP_H_
#define SIGVISOR_VMM_LOADER_SYSTEM_MAP_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "vmm/loader/symbol_table.h"

namespace sigvisor {

// Parses the text of a System.map. Untrusted: a line that is not "ADDR TYPE NAME"
// (a hex address, a one-letter type, a name) is an error naming the line.
absl::StatusOr<SymbolTable> ParseSystemMap(std::string_view text);

// Reads and parses the System.map at `path`; the error names the file.
absl::StatusOr<SymbolTable> ReadSystemMap(const std::string& path);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LOADER_SYSTEM_MAP_H_
