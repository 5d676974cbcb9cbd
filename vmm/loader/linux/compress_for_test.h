// Test-only: the compression libraries' encoders, set as Linux's build sets them, to
// make payloads for the decompressor's and the bzImage parser's tests.
#ifndef SIGVISOR_VMM_LOADER_LINUX_COMPRESS_FOR_TEST_H_
#define SIGVISOR_VMM_LOADER_LINUX_COMPRESS_FOR_TEST_H_

#include <cstdint>
#include <vector>

namespace sigvisor::linux_boot::testing {

using Data = std::vector<uint8_t>;

// xz --check=crc32 --x86 --lzma2: the kernel's settings (scripts/xz_wrap.sh).
Data Xz(const Data& in);
// lzma -9 (the .lzma "alone" format).
Data Lzma(const Data& in);
// gzip -9.
Data Gzip(const Data& in);
// zstd -19.
Data Zstd(const Data& in);
// Linux's size_append: `compressed` followed by `size`, 4 bytes little-endian.
Data WithSize(Data compressed, uint32_t size);

}  // namespace sigvisor::linux_boot::testing

#endif  // SIGVISOR_VMM_LOADER_LINUX_COMPRESS_FOR_TEST_H_
