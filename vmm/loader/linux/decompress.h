// Decompresses a bzImage's payload (the compressed vmlinux) on the host.
//
// Where guest CPL0 is emulated, Linux's own in-guest decompressor runs for minutes;
// the host's libraries do the same work in well under a second. The compressions a
// kernel can be built with are recognised by their magic bytes; xz, lzma, gzip and
// zstd (every compression Debian's kernels have used) are decompressed with liblzma,
// zlib and libzstd, the others (bzip2, lzo, lz4) are refused by name.
//
// The payload is untrusted: the output is capped, and a stream that is truncated,
// corrupt or followed by anything but Linux's own 4-byte size trailer is refused.
#ifndef SIGVISOR_VMM_LOADER_LINUX_DECOMPRESS_H_
#define SIGVISOR_VMM_LOADER_LINUX_DECOMPRESS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sigvisor::linux_boot {

enum class Compression { kUnknown, kGzip, kBzip2, kLzma, kXz, kLzo, kLz4, kZstd };

// "gzip", "bzip2", "lzma", "xz", "lzo", "lz4", "zstd"; "unknown".
std::string_view CompressionName(Compression compression);

// The compression whose magic `data` begins with (kUnknown when none matches).
Compression IdentifyCompression(std::span<const uint8_t> data);

// OK when Decompress handles `compression` (xz, lzma, gzip, zstd); otherwise an
// Unimplemented error naming it, e.g. "payload is lz4-compressed; ...".
absl::Status CheckCanDecompress(Compression compression);

// Larger than any kernel (Debian's 6.1 vmlinux is 63 MiB), small enough that a
// hostile payload cannot take the host's memory.
inline constexpr size_t kMaxDecompressedSize = size_t{512} << 20;

// Decompresses one stream of the compression IdentifyCompression finds. After the
// stream, Linux's build appends the uncompressed size as 4 little-endian bytes
// (all formats but gzip, which has its own); those 4 bytes are allowed, and must
// then match the size decompressed (mod 2^32). Anything else after the stream, a
// truncated or corrupt stream, or output beyond `max_output` bytes is an error.
absl::StatusOr<std::vector<uint8_t>> Decompress(std::span<const uint8_t> data,
                                                size_t max_output = kMaxDecompressedSize);

}  // namespace sigvisor::linux_boot

#endif  // SIGVISOR_VMM_LOADER_LINUX_DECOMPRESS_H_
