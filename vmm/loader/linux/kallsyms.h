// Linux's own symbol table, kallsyms, read out of a vmlinux whose ELF symbols are
// stripped (every distribution's): what `sigvisor trace --image BZIMAGE` names Linux's
// functions by when no System.map is given.
//
// A kernel built with CONFIG_KALLSYMS carries, in .rodata, the tables that
// scripts/kallsyms.c generates and kernel/kallsyms.c reads (/proc/kallsyms). Their
// symbols are stripped with the rest, so the tables are found by their structure, as
// vmlinux-to-elf finds them: the token table by the run of one-character tokens
// "0" .. "9" at indices '0' .. '9', checked against the token index right after it;
// then backwards, the markers (and Linux 6.1.y/6.2/6.3's kallsyms_seqs_of_names
// between them), the names and kallsyms_num_syms, each checked against the others;
// then the offsets and kallsyms_relative_base, before num_syms (up to 6.3) or after
// the token index (6.4 on), whichever decodes to addresses in ascending order, as the
// kernel's binary search needs them. CONFIG_KALLSYMS_BASE_RELATIVE is assumed
// (every x86-64 kernel since 4.6), with or without CONFIG_KALLSYMS_ABSOLUTE_PERCPU.
//
// The file is untrusted: every offset and length is checked against the bytes before
// use, counts are capped, and the search has a bounded amount of work.
#ifndef SIGVISOR_VMM_LOADER_LINUX_KALLSYMS_H_
#define SIGVISOR_VMM_LOADER_LINUX_KALLSYMS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/loader/symbol_table.h"

namespace sigvisor::linux_boot {

// Caps on what a table may claim: well above any kernel's (Debian 6.1 has 94,266
// symbols, names up to a few hundred characters; KSYM_NAME_LEN is 512 since 6.1).
inline constexpr uint32_t kMaxKallsyms = 1u << 22;
inline constexpr size_t kMaxKallsymsNameLength = 1024;  // expanded, type letter included

// One kallsyms entry: its address, nm's type letter ('T', 't', 'D', 'A', ...) and name.
struct KallsymsSymbol {
  uint64_t addr = 0;
  char type = 0;
  std::string name;

  bool operator==(const KallsymsSymbol&) const = default;
};

// Every kallsyms entry of `vmlinux_elf` (an ELF64 file; the tables are searched in its
// PT_LOAD segments' file bytes), in the table's order (by address). NotFoundError when
// no tables are there (a kernel built without CONFIG_KALLSYMS), InvalidArgumentError
// for a file that is not ELF64 or tables that contradict themselves; one line each.
absl::StatusOr<std::vector<KallsymsSymbol>> DecodeKallsyms(std::span<const uint8_t> vmlinux_elf);

// The same on one range of loaded bytes at virtual address `vaddr` (alignment is the
// address's): for the fuzz target and tests.
absl::StatusOr<std::vector<KallsymsSymbol>> DecodeKallsymsAt(uint64_t vaddr,
                                                              std::span<const uint8_t> bytes);

// The text symbols (types t, T, w, W) of `symbols` as ParseSystemMap builds them
// (vmm/loader/system_map.h): each reaches to the next higher address any entry names,
// the last is a label; upper case global, lower case local, w/W weak.
SymbolTable KallsymsTextTable(const std::vector<KallsymsSymbol>& symbols);

// DecodeKallsyms, then KallsymsTextTable. An error also when the tables name no code.
absl::StatusOr<SymbolTable> ReadKallsyms(std::span<const uint8_t> vmlinux_elf);

}  // namespace sigvisor::linux_boot

#endif  // SIGVISOR_VMM_LOADER_LINUX_KALLSYMS_H_
