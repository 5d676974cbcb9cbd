#include "vmm/loader/linux/decompress.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"

namespace sigvisor::linux_boot {
namespace {

using Bytes = std::span<const uint8_t>;

struct Magic {
  Compression compression;
  std::string_view bytes;
};

// The magics Linux's boot decompressors recognise (lib/decompress.c).
constexpr Magic kMagics[] = {
    {Compression::kGzip, std::string_view("\x1f\x8b", 2)},
    {Compression::kBzip2, std::string_view("BZh", 3)},
    {Compression::kLzma, std::string_view("\x5d\x00\x00", 3)},
    {Compression::kXz, std::string_view("\xfd\x37\x7a\x58\x5a\x00", 6)},
    {Compression::kLzo, std::string_view("\x89\x4c\x5a\x4f", 4)},
    {Compression::kLz4, std::string_view("\x02\x21\x4c\x18", 4)},
    {Compression::kZstd, std::string_view("\x28\xb5\x2f\xfd", 4)},
};

// The dictionaries of kernel builds are at most 64 MiB (lzma -9); this bounds what a
// hostile header can make liblzma allocate.
constexpr uint64_t kLzmaMemoryLimit = uint64_t{256} << 20;

// "fd 37 7a ..." for a message: the first few bytes.
std::string HexPrefix(Bytes data) {
  if (data.empty()) return "nothing (it is empty)";
  std::string hex;
  for (uint8_t b : data.first(std::min<size_t>(data.size(), 6))) {
    absl::StrAppendFormat(&hex, "%s%02x", hex.empty() ? "" : " ", b);
  }
  return hex;
}

// "512 MiB", or "1000 bytes" for a size that is not whole MiB.
std::string Size(size_t bytes) {
  if (bytes % (1 << 20) != 0) return absl::StrFormat("%d bytes", bytes);
  return absl::StrFormat("%d MiB", bytes >> 20);
}

// The output buffer: grows by doubling up to one byte past the limit, so that a
// stream that would exceed the limit is seen doing so.
class Output {
 public:
  // limit + 1 must not wrap.
  Output(size_t initial, size_t limit)
      : limit_(std::min(limit, std::numeric_limits<size_t>::max() - 1)) {
    buffer_.resize(std::min(initial, limit_ + 1));
  }

  // Free space after what was produced; empty once limit + 1 bytes are produced.
  std::span<uint8_t> Room() {
    if (produced_ == buffer_.size() && buffer_.size() <= limit_) {
      buffer_.resize(std::min(std::max<size_t>(buffer_.size() * 2, 64 << 10), limit_ + 1));
    }
    return std::span<uint8_t>(buffer_).subspan(produced_);
  }
  void Produced(size_t n) { produced_ += n; }
  size_t produced() const { return produced_; }
  bool OverLimit() const { return produced_ > limit_; }

  std::vector<uint8_t> Take() && {
    buffer_.resize(produced_);
    return std::move(buffer_);
  }

 private:
  size_t limit_;
  size_t produced_ = 0;
  std::vector<uint8_t> buffer_;
};

uint32_t LoadLe32(Bytes bytes) {
  return uint32_t{bytes[0]} | uint32_t{bytes[1]} << 8 | uint32_t{bytes[2]} << 16 |
         uint32_t{bytes[3]} << 24;
}

// A first guess at the output size, so that a kernel is decompressed without
// regrowing: Linux's trailer (or gzip's ISIZE) is the last 4 bytes. Only a guess:
// bounded by a generous ratio, so a small hostile input cannot claim a huge buffer.
size_t InitialSize(Bytes data) {
  const size_t ratio_bound = data.size() * 32 + (64 << 10);
  if (data.size() < 4) return ratio_bound;
  return std::min<size_t>(size_t{LoadLe32(data.last(4))} + 1, ratio_bound);
}

absl::Status TooLarge(Compression c, size_t limit) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s payload decompresses to more than %s; sigvisor refuses it (not a kernel?)",
      CompressionName(c), Size(limit)));
}

absl::Status Truncated(Compression c) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s payload is truncated: its stream ends early; the file is cut short or corrupt",
      CompressionName(c)));
}

absl::Status Corrupt(Compression c, std::string_view detail) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s payload is corrupt (%s); the file is damaged or not a kernel", CompressionName(c),
      detail));
}

// What may follow the stream: nothing, or Linux's 4-byte uncompressed size.
absl::Status CheckTrailer(Compression c, Bytes data, size_t consumed, size_t produced) {
  const Bytes rest = data.subspan(consumed);
  if (rest.empty()) return absl::OkStatus();
  if (rest.size() == 4) {
    const uint32_t said = LoadLe32(rest);
    if (said == static_cast<uint32_t>(produced)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s payload's size trailer says %d bytes, but it decompressed to %d; the file is "
        "corrupt",
        CompressionName(c), said, produced));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s payload has %d bytes of trailing data after its stream (at offset %d); the file is "
      "corrupt or the payload is not one stream",
      CompressionName(c), rest.size(), consumed));
}

// What one call of a library's decoder did to the room it was given.
struct Progress {
  size_t produced = 0;
  bool done = false;  // the stream's end was decoded and all its output written
};

// The loop every library shares: offer the decoder room, grow it, stop at the
// stream's end or the limit, then check what follows the stream. `step(room)` runs
// the decoder once; `consumed()` is how much input the stream took.
template <typename Step, typename Consumed>
absl::StatusOr<std::vector<uint8_t>> Drive(Compression c, Bytes data, size_t limit, Step step,
                                           Consumed consumed) {
  Output out(InitialSize(data), limit);
  while (true) {
    const std::span<uint8_t> room = out.Room();
    if (room.empty()) return TooLarge(c, limit);
    absl::StatusOr<Progress> progress = step(room);
    if (!progress.ok()) return progress.status();
    out.Produced(progress->produced);
    if (progress->done) break;
  }
  if (out.OverLimit()) return TooLarge(c, limit);
  if (absl::Status s = CheckTrailer(c, data, consumed(), out.produced()); !s.ok()) return s;
  return std::move(out).Take();
}

// ---- xz and lzma (liblzma) ---------------------------------------------------------

struct LzmaStreamEnd {
  void operator()(lzma_stream* stream) const { lzma_end(stream); }
};

absl::Status LzmaError(Compression c, lzma_ret ret) {
  switch (ret) {
    case LZMA_BUF_ERROR:  // no progress possible: the input ran out
      return Truncated(c);
    case LZMA_MEMLIMIT_ERROR:
      return Corrupt(c, absl::StrFormat("its dictionary needs more than %s",
                                        Size(kLzmaMemoryLimit)));
    case LZMA_MEM_ERROR:
      return absl::ResourceExhaustedError("liblzma: out of memory");
    case LZMA_FORMAT_ERROR:
      return Corrupt(c, "bad stream header");
    case LZMA_OPTIONS_ERROR:
      return Corrupt(c, "unsupported options");
    default:
      return Corrupt(c, absl::StrFormat("liblzma error %d", static_cast<int>(ret)));
  }
}

absl::StatusOr<std::vector<uint8_t>> DecompressLzma(Compression c, Bytes data, size_t limit) {
  lzma_stream stream = LZMA_STREAM_INIT;
  // One stream (no LZMA_CONCATENATED): what follows it is checked as a trailer.
  const lzma_ret init = c == Compression::kXz
                            ? lzma_stream_decoder(&stream, kLzmaMemoryLimit, 0)
                            : lzma_alone_decoder(&stream, kLzmaMemoryLimit);
  if (init != LZMA_OK) return absl::ResourceExhaustedError("liblzma: cannot start a decoder");
  std::unique_ptr<lzma_stream, LzmaStreamEnd> end(&stream);
  stream.next_in = data.data();
  stream.avail_in = data.size();
  return Drive(
      c, data, limit,
      [&](std::span<uint8_t> room) -> absl::StatusOr<Progress> {
        stream.next_out = room.data();
        stream.avail_out = room.size();
        const lzma_ret ret = lzma_code(&stream, LZMA_FINISH);
        if (ret != LZMA_OK && ret != LZMA_STREAM_END) return LzmaError(c, ret);
        return Progress{room.size() - stream.avail_out, ret == LZMA_STREAM_END};
      },
      [&] { return data.size() - stream.avail_in; });
}

// ---- gzip (zlib) -------------------------------------------------------------------

struct InflateEnd {
  void operator()(z_stream* stream) const { inflateEnd(stream); }
};

absl::StatusOr<std::vector<uint8_t>> DecompressGzip(Bytes data, size_t limit) {
  constexpr Compression c = Compression::kGzip;
  constexpr size_t kMaxChunk = std::numeric_limits<uInt>::max();  // zlib counts in uInt
  if (data.size() > kMaxChunk) return TooLarge(c, limit);
  z_stream stream = {};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {  // 16: gzip wrapper only
    return absl::ResourceExhaustedError("zlib: cannot start a decoder");
  }
  std::unique_ptr<z_stream, InflateEnd> end(&stream);
  stream.next_in = const_cast<Bytef*>(data.data());  // zlib's API is not const-correct
  stream.avail_in = static_cast<uInt>(data.size());
  return Drive(
      c, data, limit,
      [&](std::span<uint8_t> room) -> absl::StatusOr<Progress> {
        const uInt chunk = static_cast<uInt>(std::min(room.size(), kMaxChunk));
        stream.next_out = room.data();
        stream.avail_out = chunk;
        const int ret = inflate(&stream, Z_NO_FLUSH);
        const Progress progress{chunk - stream.avail_out, ret == Z_STREAM_END};
        // Z_BUF_ERROR with input left means the room is full: Room() grows it.
        if (ret == Z_OK || ret == Z_STREAM_END) return progress;
        if (ret == Z_BUF_ERROR && stream.avail_in > 0) return progress;
        if (ret == Z_BUF_ERROR) return Truncated(c);
        if (ret == Z_MEM_ERROR) return absl::ResourceExhaustedError("zlib: out of memory");
        return Corrupt(c, stream.msg != nullptr ? stream.msg : "zlib error");
      },
      [&] { return data.size() - stream.avail_in; });
}

// ---- zstd (libzstd) ----------------------------------------------------------------

struct ZstdFree {
  void operator()(ZSTD_DCtx* context) const { ZSTD_freeDCtx(context); }
};

absl::StatusOr<std::vector<uint8_t>> DecompressZstd(Bytes data, size_t limit) {
  constexpr Compression c = Compression::kZstd;
  // The default window limit (2^27) covers `zstd -22 --ultra`, the kernel's setting,
  // and bounds what a hostile frame header can make libzstd allocate.
  std::unique_ptr<ZSTD_DCtx, ZstdFree> context(ZSTD_createDCtx());
  if (context == nullptr) return absl::ResourceExhaustedError("libzstd: cannot start a decoder");
  ZSTD_inBuffer in = {data.data(), data.size(), 0};
  return Drive(
      c, data, limit,
      [&](std::span<uint8_t> room) -> absl::StatusOr<Progress> {
        ZSTD_outBuffer chunk = {room.data(), room.size(), 0};
        const size_t ret = ZSTD_decompressStream(context.get(), &chunk, &in);
        if (ZSTD_isError(ret)) return Corrupt(c, ZSTD_getErrorName(ret));
        // More expected, yet all input is read and the output has room: cut short.
        if (ret != 0 && in.pos == in.size && chunk.pos < chunk.size) return Truncated(c);
        return Progress{chunk.pos, ret == 0};  // 0: the frame is decoded and flushed
      },
      [&] { return in.pos; });
}

}  // namespace

std::string_view CompressionName(Compression compression) {
  switch (compression) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kBzip2:
      return "bzip2";
    case Compression::kLzma:
      return "lzma";
    case Compression::kXz:
      return "xz";
    case Compression::kLzo:
      return "lzo";
    case Compression::kLz4:
      return "lz4";
    case Compression::kZstd:
      return "zstd";
    case Compression::kUnknown:
      break;
  }
  return "unknown";
}

Compression IdentifyCompression(std::span<const uint8_t> data) {
  for (const Magic& magic : kMagics) {
    if (data.size() >= magic.bytes.size() &&
        std::memcmp(data.data(), magic.bytes.data(), magic.bytes.size()) == 0) {
      return magic.compression;
    }
  }
  return Compression::kUnknown;
}

absl::Status CheckCanDecompress(Compression compression) {
  switch (compression) {
    case Compression::kXz:
    case Compression::kLzma:
    case Compression::kGzip:
    case Compression::kZstd:
      return absl::OkStatus();
    default:
      return absl::UnimplementedError(absl::StrFormat(
          "payload is %s-compressed; sigvisor decompresses xz, lzma, gzip and zstd: rebuild "
          "the kernel with CONFIG_KERNEL_XZ (or _LZMA, _GZIP, _ZSTD)",
          CompressionName(compression)));
  }
}

absl::StatusOr<std::vector<uint8_t>> Decompress(std::span<const uint8_t> data,
                                                size_t max_output) {
  const Compression c = IdentifyCompression(data);
  switch (c) {
    case Compression::kXz:
    case Compression::kLzma:
      return DecompressLzma(c, data, max_output);
    case Compression::kGzip:
      return DecompressGzip(data, max_output);
    case Compression::kZstd:
      return DecompressZstd(data, max_output);
    case Compression::kUnknown:
      return absl::InvalidArgumentError(absl::StrFormat(
          "payload begins with %s, the magic of no compression Linux uses; the file is "
          "corrupt",
          HexPrefix(data)));
    default:
      return CheckCanDecompress(c);
  }
}

}  // namespace sigvisor::linux_boot
