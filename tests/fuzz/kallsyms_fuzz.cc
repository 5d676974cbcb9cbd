// Fuzzes the kallsyms reader (vmm/loader/linux/kallsyms.h): the input as a vmlinux, as
// `sigvisor trace --image BZIMAGE` hands it the decompressed kernel, and the input as
// one loaded range at an unaligned address, so that mutations reach the table search
// without having to keep an ELF header intact. What decodes is looked up.
#include <cstddef>
#include <cstdint>
#include <span>

#include "vmm/loader/linux/kallsyms.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  auto table = sigvisor::linux_boot::ReadKallsyms(input);
  if (table.ok()) {
    for (const sigvisor::Symbol& symbol : table->symbols()) {
      (void)table->Symbolize(symbol.addr + symbol.size / 2);
    }
  }
  auto symbols = sigvisor::linux_boot::DecodeKallsymsAt(0xffffffff82000004, input);
  if (symbols.ok()) (void)sigvisor::linux_boot::KallsymsTextTable(*symbols);
  return 0;
}
