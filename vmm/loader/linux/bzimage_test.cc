#include "vmm/loader/linux/bzimage.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vmm/loader/linux/bzimage_for_test.h"
#include "vmm/loader/linux/compress_for_test.h"

namespace sigvisor::linux_boot {
namespace {

using ::testing::HasSubstr;
using ::sigvisor::linux_boot::testing::Data;
using ::sigvisor::linux_boot::testing::Build;
using ::sigvisor::linux_boot::testing::FakeVmlinux;
using ::sigvisor::linux_boot::testing::Gzip;
using ::sigvisor::linux_boot::testing::Put;
using ::sigvisor::linux_boot::testing::Spec;

void ExpectError(const Data& file, const std::string& fragment) {
  absl::StatusOr<BzImage> image = ParseBzImage(file);
  ASSERT_FALSE(image.ok()) << "parsed, but expected an error containing: " << fragment;
  EXPECT_THAT(std::string(image.status().message()), HasSubstr(fragment));
  EXPECT_EQ(image.status().message().find('\n'), std::string::npos);
}

// ---- A good bzImage -------------------------------------------------------------------

TEST(BzImageTest, ParsesTheHeaderAndDecompressesThePayload) {
  const Data file = Build(Spec{});
  EXPECT_TRUE(LooksLikeBzImage(file));
  absl::StatusOr<BzImage> image = ParseBzImage(file);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->protocol_version, 0x020f);
  EXPECT_EQ(image->setup_sects, 3);
  EXPECT_EQ(image->loadflags, kLoadedHigh);
  EXPECT_EQ(image->xloadflags, 0x7f);
  EXPECT_EQ(image->init_size, 0x3f98000u);
  EXPECT_EQ(image->pref_address, 0x1000000u);
  EXPECT_EQ(image->kernel_alignment, 0x200000u);
  EXPECT_TRUE(image->relocatable);
  EXPECT_EQ(image->cmdline_size, 2047u);
  EXPECT_EQ(image->initrd_addr_max, 0x7fffffffu);
  EXPECT_EQ(image->kernel_offset, 4u * 512);
  EXPECT_EQ(image->payload_offset, 0x2ccu);
  EXPECT_EQ(image->payload_length, Spec{}.payload.size());
  EXPECT_EQ(image->compression, Compression::kGzip);
  EXPECT_EQ(image->vmlinux, FakeVmlinux());
  // 0x1f1 up to 0x202 + the jump's displacement, byte for byte.
  ASSERT_EQ(image->setup_header.size(), 0x26cu - 0x1f1);
  EXPECT_TRUE(std::equal(image->setup_header.begin(), image->setup_header.end(),
                         file.begin() + 0x1f1));
}

TEST(BzImageTest, SetupSectsZeroMeansFour) {
  absl::StatusOr<BzImage> image = ParseBzImage(Build(Spec{.setup_sects = 0}));
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->setup_sects, 4);
  EXPECT_EQ(image->kernel_offset, 5u * 512);
}

TEST(BzImageTest, ParseSetupHeaderDoesNotDecompress) {
  absl::StatusOr<BzImage> image = ParseSetupHeader(Build(Spec{}));
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->compression, Compression::kGzip);
  EXPECT_TRUE(image->vmlinux.empty());
}

TEST(BzImageTest, AcceptsTheOldestProtocolItTakes) {
  // 2.12's header ends at 0x268 (handover_offset, no kernel_info_offset).
  absl::StatusOr<BzImage> image = ParseBzImage(Build(Spec{.header_jump = 0x66, .version = 0x020c}));
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->setup_header.size(), 0x268u - 0x1f1);
}

// ---- Refusals -------------------------------------------------------------------------

TEST(BzImageTest, RefusesATooOldProtocol) {
  ExpectError(Build(Spec{.version = 0x020a}),
              "bzImage speaks boot protocol 2.10; sigvisor needs 2.12 or later (Linux 3.8+, "
              "which says in xloadflags whether the kernel is 64-bit): use a newer kernel");
}

TEST(BzImageTest, RefusesA32BitKernel) {
  ExpectError(Build(Spec{.xloadflags = 0}),
              "bzImage is a 32-bit kernel (no XLF_KERNEL_64 in xloadflags); sigvisor boots x86-64 "
              "kernels: build with CONFIG_X86_64=y");
}

TEST(BzImageTest, RefusesAZImage) {
  ExpectError(Build(Spec{.loadflags = 0}), "bzImage loads low (LOADED_HIGH clear: a zImage)");
}

TEST(BzImageTest, RefusesABadMagic) {
  Data file = Build(Spec{});
  file[0x202] = 'X';
  EXPECT_FALSE(LooksLikeBzImage(file));
  ExpectError(file, "not a bzImage (no \"HdrS\" at offset 0x202) nor an ELF file");
  file = Build(Spec{});
  file[0x1fe] = 0;
  ExpectError(file, "bzImage's boot_flag at 0x1fe is 0xaa00, not 0xaa55");
}

TEST(BzImageTest, RefusesAPayloadOutsideTheFile) {
  ExpectError(Build(Spec{.extra_payload_length = 0x1000}), "bzImage's payload [0x");
  // Lengths and offsets that would wrap a 32-bit sum.
  Data file = Build(Spec{});
  Put<uint32_t>(file, 0x24c, 0xffffffffu);
  ExpectError(file, "lies outside the file");
  file = Build(Spec{});
  Put<uint32_t>(file, 0x248, 0xfffffff0u);
  ExpectError(file, "lies outside the file");
}

TEST(BzImageTest, RefusesEveryTruncation) {
  const Data file = Build(Spec{});
  for (size_t size = 0; size < file.size() - 0x100; size += 7) {
    absl::StatusOr<BzImage> image = ParseBzImage(Data(file.begin(), file.begin() + size));
    ASSERT_FALSE(image.ok()) << "parsed when cut to " << size << " bytes";
    EXPECT_EQ(image.status().message().find('\n'), std::string::npos);
  }
  ExpectError(Data(file.begin(), file.begin() + 0x100), "file is 256 bytes, too short for a bzImage");
  ExpectError(Data(file.begin(), file.begin() + 0x240), "bzImage is truncated: 576 bytes, but its "
                                                        "setup header ends at 0x26c");
  ExpectError(Data(file.begin(), file.begin() + 0x300),
              "bzImage is truncated: 768 bytes, but its 3 setup sectors end at 0x800");
}

TEST(BzImageTest, RefusesABadHeaderLength) {
  ExpectError(Build(Spec{.header_jump = 0x20}),
              "bzImage's setup header ends at 0x222 (from the jump at 0x200); protocol 2.12 needs "
              "0x264 to 0x290");
  ExpectError(Build(Spec{.header_jump = 0x90}), "setup header ends at 0x292");
}

TEST(BzImageTest, RefusesBadSizes) {
  ExpectError(Build(Spec{.init_size = 0}), "bzImage's init_size is 0");
  ExpectError(Build(Spec{.kernel_alignment = 0x180000}),
              "bzImage's kernel_alignment 0x180000 is not a power of two");
  ExpectError(Build(Spec{.payload = {}}), "bzImage has an empty payload");
}

TEST(BzImageTest, RefusesAnUnsupportedCompressionByName) {
  ExpectError(Build(Spec{.payload = {0x02, 0x21, 0x4c, 0x18, 1, 2, 3, 4}}),
              "bzImage's payload is lz4-compressed; sigvisor decompresses xz, lzma, gzip and "
              "zstd: rebuild the kernel with CONFIG_KERNEL_XZ (or _LZMA, _GZIP, _ZSTD)");
  // Refused before decompressing, by the header check alone.
  EXPECT_THAT(std::string(ParseSetupHeader(Build(Spec{.payload = {'B', 'Z', 'h', '9'}}))
                              .status()
                              .message()),
              HasSubstr("bzip2-compressed"));
}

TEST(BzImageTest, RefusesAPayloadThatIsNotAKernel) {
  ExpectError(Build(Spec{.payload = Gzip(Data(100, 0x90))}),
              "bzImage's gzip payload decompresses to 100 bytes that are not an ELF vmlinux");
  ExpectError(Build(Spec{.payload = Data(64, 0x90)}), "bzImage's payload begins with 90 90");
  Data cut = Gzip(FakeVmlinux());
  cut.resize(cut.size() / 2);
  ExpectError(Build(Spec{.payload = cut}), "bzImage's gzip payload is truncated");
}

}  // namespace
}  // namespace sigvisor::linux_boot
