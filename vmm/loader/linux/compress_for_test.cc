#include "vmm/loader/linux/compress_for_test.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include "gtest/gtest.h"

namespace sigvisor::linux_boot::testing {

Data Xz(const Data& in) {
  lzma_options_lzma lzma2;
  lzma_lzma_preset(&lzma2, 6);
  lzma_filter filters[] = {{LZMA_FILTER_X86, nullptr},
                           {LZMA_FILTER_LZMA2, &lzma2},
                           {LZMA_VLI_UNKNOWN, nullptr}};
  Data out(lzma_stream_buffer_bound(in.size()));
  size_t pos = 0;
  EXPECT_EQ(lzma_stream_buffer_encode(filters, LZMA_CHECK_CRC32, nullptr, in.data(), in.size(),
                                      out.data(), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

Data Lzma(const Data& in) {
  lzma_options_lzma options;
  lzma_lzma_preset(&options, 9);
  lzma_stream stream = LZMA_STREAM_INIT;
  EXPECT_EQ(lzma_alone_encoder(&stream, &options), LZMA_OK);
  Data out(in.size() + (64 << 10));
  stream.next_in = in.data();
  stream.avail_in = in.size();
  stream.next_out = out.data();
  stream.avail_out = out.size();
  EXPECT_EQ(lzma_code(&stream, LZMA_FINISH), LZMA_STREAM_END);
  out.resize(stream.total_out);
  lzma_end(&stream);
  return out;
}

Data Gzip(const Data& in) {
  z_stream stream = {};
  EXPECT_EQ(deflateInit2(&stream, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Data out(deflateBound(&stream, in.size()));
  stream.next_in = const_cast<Bytef*>(in.data());
  stream.avail_in = in.size();
  stream.next_out = out.data();
  stream.avail_out = out.size();
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

Data Zstd(const Data& in) {
  Data out(ZSTD_compressBound(in.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 19);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

Data WithSize(Data compressed, uint32_t size) {
  for (int i = 0; i < 4; ++i) compressed.push_back(uint8_t(size >> (8 * i)));
  return compressed;
}

}  // namespace sigvisor::linux_boot::testing
