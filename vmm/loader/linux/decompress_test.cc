#include "vmm/loader/linux/decompress.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vmm/loader/linux/compress_for_test.h"

namespace sigvisor::linux_boot {
namespace {

using ::testing::HasSubstr;
using ::sigvisor::linux_boot::testing::Data;
using ::sigvisor::linux_boot::testing::Gzip;
using ::sigvisor::linux_boot::testing::Lzma;
using ::sigvisor::linux_boot::testing::WithSize;
using ::sigvisor::linux_boot::testing::Xz;
using ::sigvisor::linux_boot::testing::Zstd;

// Bytes that compress well but not to nothing: text-like runs with a counter. 256 KiB
// by default: past the first output buffer, so the buffer has to grow.
Data Sample(size_t size = 256 << 10) {
  Data data;
  for (uint32_t i = 0; data.size() < size; ++i) {
    const std::string line = "line " + std::to_string(i * 7919 % 100003) + " of the kernel\n";
    data.insert(data.end(), line.begin(), line.end());
  }
  return data;
}

struct Format {
  const char* name;
  Compression compression;
  Data (*compress)(const Data&);
};

class DecompressFormatTest : public ::testing::TestWithParam<Format> {};

TEST_P(DecompressFormatTest, RoundTrips) {
  const Data data = Sample();
  const Data compressed = GetParam().compress(data);
  EXPECT_EQ(IdentifyCompression(compressed), GetParam().compression);
  EXPECT_TRUE(CheckCanDecompress(GetParam().compression).ok());
  absl::StatusOr<Data> out = Decompress(compressed);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, data);
}

TEST_P(DecompressFormatTest, RoundTripsWithLinuxSizeTrailer) {
  const Data data = Sample();
  absl::StatusOr<Data> out = Decompress(WithSize(GetParam().compress(data), data.size()));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, data);
}

TEST_P(DecompressFormatTest, RoundTripsEmptyInput) {
  absl::StatusOr<Data> out = Decompress(GetParam().compress(Data{}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->empty());
}

TEST_P(DecompressFormatTest, RefusesAWrongSizeTrailer) {
  const Data data = Sample();
  absl::StatusOr<Data> out = Decompress(WithSize(GetParam().compress(data), data.size() + 1));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr(std::string(GetParam().name) + " payload's size trailer says " +
                        std::to_string(data.size() + 1)));
}

TEST_P(DecompressFormatTest, RefusesTrailingData) {
  Data compressed = GetParam().compress(Sample());
  const size_t stream_size = compressed.size();
  compressed.insert(compressed.end(), {1, 2, 3, 4, 5, 6, 7});
  absl::StatusOr<Data> out = Decompress(compressed);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(std::string(out.status().message()),
            std::string(GetParam().name) + " payload has 7 bytes of trailing data after its " +
                "stream (at offset " + std::to_string(stream_size) +
                "); the file is corrupt or the payload is not one stream");
}

TEST_P(DecompressFormatTest, RefusesEveryTruncation) {
  const Data compressed = GetParam().compress(Sample(4 << 10));  // small: cut at every byte
  for (size_t cut = 1; cut < compressed.size(); ++cut) {
    absl::StatusOr<Data> out = Decompress(Data(compressed.begin(), compressed.begin() + cut));
    ASSERT_FALSE(out.ok()) << "cut at " << cut << " of " << compressed.size();
    EXPECT_EQ(out.status().message().find('\n'), std::string::npos);
  }
  absl::StatusOr<Data> half =
      Decompress(Data(compressed.begin(), compressed.begin() + compressed.size() / 2));
  EXPECT_EQ(std::string(half.status().message()),
            std::string(GetParam().name) +
                " payload is truncated: its stream ends early; the file is cut short or corrupt");
}

TEST_P(DecompressFormatTest, RefusesACorruptedStream) {
  Data compressed = GetParam().compress(Sample());
  compressed[compressed.size() / 2] ^= 0x55;
  absl::StatusOr<Data> out = Decompress(compressed);
  // Some flips decode to other bytes that only the check catches; all must fail.
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr(GetParam().name));
}

TEST_P(DecompressFormatTest, CapsTheOutput) {
  const Data data = Sample();
  const Data compressed = WithSize(GetParam().compress(data), data.size());
  absl::StatusOr<Data> out = Decompress(compressed, data.size() - 1);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(std::string(out.status().message()),
            std::string(GetParam().name) + " payload decompresses to more than " +
                std::to_string(data.size() - 1) + " bytes; sigvisor refuses it (not a kernel?)");
  // Exactly at the cap is fine, and so is no cap at all.
  absl::StatusOr<Data> exact = Decompress(compressed, data.size());
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->size(), data.size());
  EXPECT_TRUE(Decompress(compressed, std::numeric_limits<size_t>::max()).ok());
}

INSTANTIATE_TEST_SUITE_P(Formats, DecompressFormatTest,
                         ::testing::Values(Format{"xz", Compression::kXz, Xz},
                                           Format{"lzma", Compression::kLzma, Lzma},
                                           Format{"gzip", Compression::kGzip, Gzip},
                                           Format{"zstd", Compression::kZstd, Zstd}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- Magics, and what is refused ----------------------------------------------------

TEST(DecompressTest, IdentifiesEachMagic) {
  EXPECT_EQ(IdentifyCompression(Data{0x1f, 0x8b, 8}), Compression::kGzip);
  EXPECT_EQ(IdentifyCompression(Data{'B', 'Z', 'h', '9'}), Compression::kBzip2);
  EXPECT_EQ(IdentifyCompression(Data{0x5d, 0, 0, 0x80}), Compression::kLzma);
  EXPECT_EQ(IdentifyCompression(Data{0xfd, 0x37, 0x7a, 0x58, 0x5a, 0}), Compression::kXz);
  EXPECT_EQ(IdentifyCompression(Data{0x89, 0x4c, 0x5a, 0x4f}), Compression::kLzo);
  EXPECT_EQ(IdentifyCompression(Data{0x02, 0x21, 0x4c, 0x18}), Compression::kLz4);
  EXPECT_EQ(IdentifyCompression(Data{0x28, 0xb5, 0x2f, 0xfd}), Compression::kZstd);
  EXPECT_EQ(IdentifyCompression(Data{0xfd, 0x37, 0x7a, 0x58, 0x5a}), Compression::kUnknown);
  EXPECT_EQ(IdentifyCompression(Data{0x7f, 'E', 'L', 'F'}), Compression::kUnknown);
  EXPECT_EQ(IdentifyCompression(Data{}), Compression::kUnknown);
}

TEST(DecompressTest, RefusesUnsupportedCompressionsByName) {
  const std::pair<Data, const char*> cases[] = {
      {Data{'B', 'Z', 'h', '9', 0, 0, 0, 0}, "bzip2"},
      {Data{0x89, 0x4c, 0x5a, 0x4f, 0, 0, 0, 0}, "lzo"},
      {Data{0x02, 0x21, 0x4c, 0x18, 0, 0, 0, 0}, "lz4"},
  };
  for (const auto& [data, name] : cases) {
    absl::StatusOr<Data> out = Decompress(data);
    ASSERT_FALSE(out.ok()) << name;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(std::string(out.status().message()),
              std::string("payload is ") + name +
                  "-compressed; sigvisor decompresses xz, lzma, gzip and zstd: rebuild the "
                  "kernel with CONFIG_KERNEL_XZ (or _LZMA, _GZIP, _ZSTD)");
  }
}

TEST(DecompressTest, RefusesAnUnknownMagic) {
  absl::StatusOr<Data> out = Decompress(Data{0x7f, 'E', 'L', 'F', 2, 1, 1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(std::string(out.status().message()),
            "payload begins with 7f 45 4c 46 02 01, the magic of no compression Linux uses; the "
            "file is corrupt");
  EXPECT_THAT(std::string(Decompress(Data{}).status().message()), HasSubstr("it is empty"));
}

TEST(DecompressTest, NamesEachCompression) {
  EXPECT_EQ(CompressionName(Compression::kXz), "xz");
  EXPECT_EQ(CompressionName(Compression::kZstd), "zstd");
  EXPECT_EQ(CompressionName(Compression::kUnknown), "unknown");
}

}  // namespace
}  // namespace sigvisor::linux_boot
