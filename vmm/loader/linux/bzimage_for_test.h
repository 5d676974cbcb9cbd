// Test-only: small bzImages built field by field, for the parser's tests and fuzz seeds.
#ifndef SIGVISOR_VMM_LOADER_LINUX_BZIMAGE_FOR_TEST_H_
#define SIGVISOR_VMM_LOADER_LINUX_BZIMAGE_FOR_TEST_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "vmm/loader/linux/bzimage.h"
#include "vmm/loader/linux/compress_for_test.h"

namespace sigvisor::linux_boot::testing {

// What a decompressed payload must look like: an ELF file (only its magic matters to
// the bzImage parser).
Data FakeVmlinux();

// The fields of a bzImage the tests vary; the defaults are Debian 6.1's.
struct Spec {
  uint8_t setup_sects = 3;
  uint8_t header_jump = 0x6a;  // header ends at 0x26c (protocol 2.15)
  uint16_t version = 0x020f;
  uint8_t loadflags = kLoadedHigh;
  uint16_t xloadflags = 0x7f;
  uint32_t init_size = 0x3f98000;
  uint64_t pref_address = 0x1000000;
  uint32_t kernel_alignment = 0x200000;
  uint8_t relocatable = 1;
  uint32_t cmdline_size = 2047;
  uint32_t initrd_addr_max = 0x7fffffff;
  uint32_t payload_offset = 0x2cc;  // into the protected-mode kernel
  Data payload = Gzip(FakeVmlinux());
  uint32_t extra_payload_length = 0;  // added to payload.size() in the header
};

// The bzImage: setup sectors with the header, then the payload at its offset, then
// 0x100 bytes of padding.
Data Build(const Spec& spec);

// Stores `value` at `offset` of `file` (little-endian, as the header is).
template <typename T>
void Put(Data& file, uint64_t offset, T value) {
  std::memcpy(file.data() + offset, &value, sizeof(T));
}

}  // namespace sigvisor::linux_boot::testing

#endif  // SIGVISOR_VMM_LOADER_LINUX_BZIMAGE_FOR_TEST_H_
