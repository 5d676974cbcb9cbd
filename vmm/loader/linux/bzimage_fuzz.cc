// Fuzzes the bzImage path: the setup header parser and the payload's decompressors
// (ParseBzImage), and the decompressors on raw bytes (Decompress), as
// `sigvisor run --image FILE` meets them. A payload that parses is handed to the ELF
// parser, as the boot does.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "vmm/loader/elf_image.h"
#include "vmm/loader/linux/bzimage.h"
#include "vmm/loader/linux/decompress.h"

namespace {

// Small, so that a stream of zeros cannot make one run take seconds.
constexpr size_t kFuzzMaxOutput = size_t{16} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  (void)sigvisor::linux_boot::LooksLikeBzImage(input);
  auto image = sigvisor::linux_boot::ParseBzImage(input, kFuzzMaxOutput);
  if (image.ok()) {
    // What the boot loader copies into boot_params.hdr is inside the file.
    volatile uint8_t sink = image->setup_header.back();
    (void)sink;
    (void)sigvisor::ElfImage::Parse(std::move(image->vmlinux));
  }
  (void)sigvisor::linux_boot::Decompress(input, kFuzzMaxOutput);
  return 0;
}
