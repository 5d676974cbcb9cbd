// Test-only: small kallsyms tables laid out as scripts/kallsyms.c lays them out, in a
// stripped ELF vmlinux, for the reader's tests and the fuzz target's seeds.
#ifndef SIGVISOR_VMM_LOADER_LINUX_KALLSYMS_FOR_TEST_H_
#define SIGVISOR_VMM_LOADER_LINUX_KALLSYMS_FOR_TEST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vmm/loader/linux/kallsyms.h"

namespace sigvisor::linux_boot::testing {

struct KallsymsSpec {
  // In address order, as the kernel sorts them. With absolute_percpu, type 'A' symbols
  // are the per-CPU (absolute) ones: their addresses are at most INT32_MAX.
  std::vector<KallsymsSymbol> symbols;
  // Multi-character tokens, each given a byte no name uses; names are encoded with the
  // longest that matches, else one character per token. Unused bytes get empty tokens.
  std::vector<std::string> tokens;
  bool absolute_percpu = true;  // x86-64 SMP; else every offset is from the first symbol
  bool seqs_of_names = false;   // kallsyms_seqs_of_names (6.1.y, 6.2 on)
  bool offsets_last = false;    // 6.4 on: offsets and relative base after the token index
  uint64_t vaddr = 0xffffffff82000000;  // where the tables' segment is loaded
  size_t lead = 0x20;                   // bytes of 0xaa before the tables, in that segment
};

// Where each table is in the segment's bytes.
struct KallsymsTables {
  std::vector<uint8_t> bytes;
  size_t offsets = 0, relative_base = 0, num_syms = 0, names = 0, markers = 0, seqs = 0,
         token_table = 0, token_index = 0;
};

KallsymsTables BuildKallsymsTables(const KallsymsSpec& spec);

// An ELF64 vmlinux without sections: a text segment (R X, 0x40 bytes at
// 0xffffffff81000000) and a segment of `tables` loaded at `vaddr`.
std::vector<uint8_t> KallsymsElf(const std::vector<uint8_t>& tables, uint64_t vaddr);
std::vector<uint8_t> KallsymsElf(const KallsymsSpec& spec);

// A few symbols as Linux has them: per-CPU ones ('A'), text of each kind, data, and
// digits in the names.
KallsymsSpec SmallKernel();

}  // namespace sigvisor::linux_boot::testing

#endif  // SIGVISOR_VMM_LOADER_LINUX_KALLSYMS_FOR_TEST_H_
