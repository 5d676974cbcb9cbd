// Fuzzes the ELF loader: parse untrusted image bytes (ELF64/ELF32 headers, program
// and section headers, notes, symbols, a Multiboot header), then load what parsed
// into a small guest RAM, as `sigvisor run --image FILE` does.
#include <cstdint>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/loader/elf_image.h"
#include "vmm/loader/elf_loader.h"
#include "vmm/machine/guest_memory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static sigvisor::GuestMemory* memory =
      new sigvisor::GuestMemory(*sigvisor::GuestMemory::Create(4 << 20));
  for (bool host : {false, true}) {
    auto image = sigvisor::ElfImage::Parse(std::vector<uint8_t>(data, data + size),
                                           sigvisor::ElfParseOptions{.allow_host_binaries = host});
    if (!image.ok()) continue;
    // Everything Parse promises is safe to touch.
    for (const auto& segment : image->segments()) (void)segment;
    for (const auto& section : image->executable_sections()) {
      uint8_t sum = 0;
      for (uint8_t b : section.bytes) sum = uint8_t(sum ^ b);
      volatile uint8_t sink = sum;
      (void)sink;
      (void)image->symbols().Symbolize(section.vaddr);
    }
    (void)image->symbols().Symbolize(image->entry());
    (void)sigvisor::CheckAbiVersion(*image, SIGVISOR_ABI_VERSION);
    if (image->bootable()) (void)sigvisor::LoadElfImage(*image, *memory);
  }
  return 0;
}
