#include "vmm/loader/elf_loader.h"

#include <elf.h>

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/loader/elf_image.h"
#include "vmm/loader/elf_test_builder.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor {
namespace {

using ::sigvisor::testing::ElfBuilder;
using ::sigvisor::testing::kDataPaddr;
using ::sigvisor::testing::kTextPaddr;
using ::sigvisor::testing::TestSegment;
using ::sigvisor::testing::ValidGuest;
using ::testing::HasSubstr;

constexpr uint64_t kRamSize = 4 << 20;  // 4 MiB

ElfImage MustParse(const ElfBuilder& builder, const ElfParseOptions& options = {}) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(builder.Build().bytes, options);
  EXPECT_TRUE(image.ok()) << image.status();
  return *std::move(image);
}

GuestMemory MustCreate(uint64_t size) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(size);
  EXPECT_TRUE(memory.ok()) << memory.status();
  return *std::move(memory);
}

std::vector<uint8_t> ReadGuest(const GuestMemory& memory, uint64_t gpa, size_t len) {
  std::vector<uint8_t> out(len);
  EXPECT_TRUE(memory.Read(gpa, out).ok());
  return out;
}

TEST(ElfLoaderTest, LoadsSegmentsAndZeroesBss) {
  ElfImage image = MustParse(ValidGuest());
  GuestMemory memory = MustCreate(kRamSize);
  // Dirty RAM, as if reused: bss must come out zero anyway.
  ASSERT_TRUE(memory.Fill(0, 0xaa, kRamSize).ok());

  ASSERT_TRUE(LoadElfImage(image, memory).ok());

  std::vector<uint8_t> text = ReadGuest(memory, kTextPaddr, 0x40);
  for (size_t i = 0; i < text.size(); ++i) ASSERT_EQ(text[i], i) << i;
  std::vector<uint8_t> data = ReadGuest(memory, kDataPaddr, 0x20);
  for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], 0xd0 + i) << i;
  std::vector<uint8_t> bss = ReadGuest(memory, kDataPaddr + 0x20, 0x2000 - 0x20);
  for (size_t i = 0; i < bss.size(); ++i) ASSERT_EQ(bss[i], 0) << "bss byte " << i;
  // Nothing outside the segments was touched.
  EXPECT_EQ(ReadGuest(memory, kTextPaddr - 1, 1)[0], 0xaa);
  EXPECT_EQ(ReadGuest(memory, kTextPaddr + 0x40, 1)[0], 0xaa);
  EXPECT_EQ(ReadGuest(memory, kDataPaddr + 0x2000, 1)[0], 0xaa);
}

TEST(ElfLoaderTest, SegmentEndingExactlyAtEndOfRamFits) {
  ElfBuilder b;
  b.SetEntry(kRamSize - 0x1000)
      .AddSegment({.flags = PF_R | PF_X, .paddr = kRamSize - 0x1000, .data = {0xf4},
                   .memsz = 0x1000});
  ElfImage image = MustParse(b);
  GuestMemory memory = MustCreate(kRamSize);
  ASSERT_TRUE(LoadElfImage(image, memory).ok());
  EXPECT_EQ(ReadGuest(memory, kRamSize - 0x1000, 1)[0], 0xf4);
}

TEST(ElfLoaderTest, RefusesSegmentBeyondRam) {
  ElfBuilder b = ValidGuest();
  b.AddSegment({.flags = PF_R, .paddr = kRamSize - 0x100, .data = {1, 2, 3}, .memsz = 0x200});
  ElfImage image = MustParse(b);
  GuestMemory memory = MustCreate(kRamSize);
  ASSERT_TRUE(memory.Fill(0, 0xaa, kRamSize).ok());

  absl::Status status = LoadElfImage(image, memory);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("PT_LOAD segment 2"));
  EXPECT_THAT(message, HasSubstr("[0x3fff00, 0x400100)"));
  EXPECT_THAT(message, HasSubstr("guest RAM [0, 0x400000) (4 MiB)"));
  // All or nothing: the segments that did fit were not written either.
  EXPECT_EQ(ReadGuest(memory, kTextPaddr, 1)[0], 0xaa);
}

TEST(ElfLoaderTest, RefusesSegmentFarAboveRam) {
  ElfBuilder b;
  b.SetEntry(0xffff'ffff'0000'0000)
      .AddSegment({.flags = PF_R | PF_X, .paddr = 0xffff'ffff'0000'0000, .data = {0xf4}});
  ElfImage image = MustParse(b);
  GuestMemory memory = MustCreate(kRamSize);
  absl::Status status = LoadElfImage(image, memory);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("PT_LOAD segment 0 [0xffffffff00000000, 0xffffffff00000001) does not fit"));
}

TEST(ElfLoaderTest, RefusesHostBinaries) {
  ElfImage image = MustParse(ValidGuest().SetType(ET_DYN), {.allow_host_binaries = true});
  GuestMemory memory = MustCreate(kRamSize);
  absl::Status status = LoadElfImage(image, memory);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr("not a static ET_EXEC executable"));
}

TEST(ElfLoaderTest, AbiVersionMatches) {
  EXPECT_TRUE(CheckAbiVersion(MustParse(ValidGuest()), SIGVISOR_ABI_VERSION).ok());
}

TEST(ElfLoaderTest, AbiNoteMissing) {
  ElfBuilder b;
  b.SetEntry(0x100000).AddSegment({.flags = PF_R | PF_X, .paddr = 0x100000, .data = {0xf4}});
  absl::Status status = CheckAbiVersion(MustParse(b), SIGVISOR_ABI_VERSION);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("no sigvisor ABI note (is this a sigvisor guest image?)"));
}

TEST(ElfLoaderTest, AbiVersionMismatch) {
  ElfBuilder b;
  b.SetEntry(0x100000)
      .AddSegment({.flags = PF_R | PF_X, .paddr = 0x100000, .data = {0xf4}})
      .AddAbiNote(SIGVISOR_ABI_VERSION + 4);
  absl::Status status = CheckAbiVersion(MustParse(b), SIGVISOR_ABI_VERSION);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrFormat("image speaks sigvisor ABI %d, this VMM speaks ABI %d; "
                                        "rebuild the image against guest-kit/abi/sigvisor_abi.h",
                                        SIGVISOR_ABI_VERSION + 4, SIGVISOR_ABI_VERSION)));
}

}  // namespace
}  // namespace sigvisor
