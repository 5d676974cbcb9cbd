#include "vmm/loader/multiboot.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor {
namespace {

using ::testing::HasSubstr;

void Put32(std::vector<uint8_t>& bytes, size_t offset, uint32_t value) {
  if (bytes.size() < offset + 4) bytes.resize(offset + 4);
  std::memcpy(bytes.data() + offset, &value, 4);
}

// A Multiboot header at `offset` with `flags` and a right (or wrong) checksum.
void PutHeader(std::vector<uint8_t>& bytes, size_t offset, uint32_t flags, bool good = true) {
  Put32(bytes, offset, kMultibootHeaderMagic);
  Put32(bytes, offset + 4, flags);
  Put32(bytes, offset + 8, -(kMultibootHeaderMagic + flags) + (good ? 0 : 1));
}

// A flat kernel: header at 0x10 with address fields; loads at 1 MiB, 0x100 file bytes,
// bss to 0x1000, entry at +0x40.
std::vector<uint8_t> FlatKernel() {
  std::vector<uint8_t> bytes(0x100, 0x90);
  PutHeader(bytes, 0x10, kMultibootMemoryInfo | kMultibootAoutKludge);
  Put32(bytes, 0x1c, 0x100010);  // header_addr
  Put32(bytes, 0x20, 0x100000);  // load_addr
  Put32(bytes, 0x24, 0x100100);  // load_end_addr
  Put32(bytes, 0x28, 0x101000);  // bss_end_addr
  Put32(bytes, 0x2c, 0x100040);  // entry_addr
  return bytes;
}

TEST(MultibootTest, FindsTheFirstValidHeader) {
  std::vector<uint8_t> bytes(64, 0);
  PutHeader(bytes, 4, 0, /*good=*/false);  // wrong checksum: just bytes, skipped
  PutHeader(bytes, 20, kMultibootMemoryInfo);
  absl::StatusOr<std::optional<MultibootHeader>> found = FindMultibootHeader(bytes);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->file_offset, 20u);
  EXPECT_EQ((*found)->flags, kMultibootMemoryInfo);
}

TEST(MultibootTest, OnlyInTheFirst8KiBAndAligned) {
  std::vector<uint8_t> bytes(9000, 0);
  PutHeader(bytes, 8192, 0);  // past the search window
  EXPECT_FALSE(FindMultibootHeader(bytes)->has_value());
  std::vector<uint8_t> unaligned(64, 0);
  PutHeader(unaligned, 6, 0);
  EXPECT_FALSE(FindMultibootHeader(unaligned)->has_value());
  EXPECT_FALSE(FindMultibootHeader(std::vector<uint8_t>{1, 2, 3})->has_value());
}

TEST(MultibootTest, UnknownRequiredFlagsAreRefused) {
  std::vector<uint8_t> bytes(64, 0);
  PutHeader(bytes, 0, 1u << 5);
  absl::StatusOr<std::optional<MultibootHeader>> found = FindMultibootHeader(bytes);
  ASSERT_FALSE(found.ok());
  EXPECT_THAT(std::string(found.status().message()), HasSubstr("required features 0x20"));
}

TEST(MultibootTest, AddressFieldsCutOffByTheFileAreRefused) {
  std::vector<uint8_t> bytes(16, 0);
  PutHeader(bytes, 0, kMultibootAoutKludge);
  EXPECT_FALSE(FindMultibootHeader(bytes).ok());
}

TEST(MultibootTest, AoutLayout) {
  std::vector<uint8_t> bytes = FlatKernel();
  std::optional<MultibootHeader> header = *FindMultibootHeader(bytes);
  ASSERT_TRUE(header.has_value());
  absl::StatusOr<MultibootAoutLoad> load = MultibootAoutLayout(bytes, *header);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(load->load_addr, 0x100000u);
  EXPECT_EQ(load->bytes.size(), 0x100u);
  EXPECT_EQ(load->memsz, 0x1000u);
  EXPECT_EQ(load->entry, 0x100040u);
}

TEST(MultibootTest, BadAddressFieldsAreRefused) {
  struct Case {
    size_t field;
    uint32_t value;
    const char* fragment;
  };
  for (const Case& c : {Case{0x1c, 0x0ff000, "header_addr is below load_addr"},
                        Case{0x1c, 0x100100, "before the file"},
                        Case{0x24, 0x200000, "past the end of the file"},
                        Case{0x28, 0x100080, "bss_end_addr is below the load end"},
                        Case{0x2c, 0x200000, "entry_addr is outside the loaded range"}}) {
    std::vector<uint8_t> bytes = FlatKernel();
    Put32(bytes, c.field, c.value);
    std::optional<MultibootHeader> header = *FindMultibootHeader(bytes);
    absl::StatusOr<MultibootAoutLoad> load = MultibootAoutLayout(bytes, *header);
    ASSERT_FALSE(load.ok()) << c.fragment;
    EXPECT_THAT(std::string(load.status().message()), HasSubstr(c.fragment));
  }
}

TEST(MultibootTest, FlatKernelParsesAsOneSegment) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(FlatKernel());
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->elf_class(), 0);
  ASSERT_TRUE(image->multiboot().has_value());
  EXPECT_FALSE(image->abi_version().has_value());
  EXPECT_EQ(image->entry(), 0x100040u);
  ASSERT_EQ(image->segments().size(), 1u);
  EXPECT_EQ(image->segments()[0].paddr, 0x100000u);
  EXPECT_EQ(image->segments()[0].filesz, 0x100u);
  EXPECT_EQ(image->segments()[0].memsz, 0x1000u);
  EXPECT_EQ(image->load_begin(), 0x100000u);
  EXPECT_EQ(image->load_end(), 0x101000u);
  EXPECT_TRUE(image->bootable());
}

TEST(MultibootTest, NonElfWithoutAddressFieldsIsNotAnImage) {
  std::vector<uint8_t> bytes(64, 0);
  PutHeader(bytes, 0, kMultibootMemoryInfo);
  absl::StatusOr<ElfImage> image = ElfImage::Parse(bytes);
  ASSERT_FALSE(image.ok());
  EXPECT_THAT(std::string(image.status().message()), HasSubstr("not an ELF file"));
}

}  // namespace
}  // namespace sigvisor
