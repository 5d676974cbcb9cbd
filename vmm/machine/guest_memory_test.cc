#include "vmm/machine/guest_memory.h"

#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

constexpr uint64_t kSize = 2 * 4096;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

GuestMemory MakeMemory() {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(kSize);
  EXPECT_TRUE(memory.ok()) << memory.status();
  return *std::move(memory);
}

TEST(GuestMemoryTest, CreateRequiresANonZeroMultipleOf4KiB) {
  for (uint64_t bad : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{4097},
                       uint64_t{3 * 4096 + 512}}) {
    absl::StatusOr<GuestMemory> memory = GuestMemory::Create(bad);
    EXPECT_EQ(memory.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(4096);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->size(), 4096u);
  EXPECT_NE(memory->host_base(), nullptr);
}

TEST(GuestMemoryTest, StartsZeroed) {
  GuestMemory memory = MakeMemory();
  absl::StatusOr<std::span<const uint8_t>> all =
      static_cast<const GuestMemory&>(memory).Span(0, kSize);
  ASSERT_TRUE(all.ok()) << all.status();
  for (uint8_t byte : *all) ASSERT_EQ(byte, 0);
}

TEST(GuestMemoryTest, ContainsIsOverflowSafe) {
  GuestMemory memory = MakeMemory();
  EXPECT_TRUE(memory.Contains(0, kSize));
  EXPECT_TRUE(memory.Contains(kSize - 1, 1));
  EXPECT_TRUE(memory.Contains(kSize, 0));  // an empty range at the end
  EXPECT_FALSE(memory.Contains(kSize - 1, 2));
  EXPECT_FALSE(memory.Contains(0, kSize + 1));
  EXPECT_FALSE(memory.Contains(kSize + 1, 0));
  // gpa + len wraps around to a small number: must still be refused.
  EXPECT_FALSE(memory.Contains(1, kMax));
  EXPECT_FALSE(memory.Contains(kMax, 2));
  EXPECT_FALSE(memory.Contains(kSize - 1, kMax));
  EXPECT_FALSE(memory.Contains(kMax, 0));
}

TEST(GuestMemoryTest, SpanAtTheEdges) {
  GuestMemory memory = MakeMemory();
  absl::StatusOr<std::span<uint8_t>> last = memory.Span(kSize - 1, 1);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->size(), 1u);
  EXPECT_EQ(last->data(), static_cast<uint8_t*>(memory.host_base()) + kSize - 1);

  absl::StatusOr<std::span<uint8_t>> empty_at_end = memory.Span(kSize, 0);
  ASSERT_TRUE(empty_at_end.ok()) << empty_at_end.status();
  EXPECT_TRUE(empty_at_end->empty());

  EXPECT_EQ(memory.Span(kSize - 1, 2).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(memory.Span(kSize + 1, 0).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(memory.Span(1, kMax).status().code(), absl::StatusCode::kOutOfRange);

  const GuestMemory& read_only = memory;
  EXPECT_TRUE(read_only.Span(kSize - 1, 1).ok());
  EXPECT_EQ(read_only.Span(kSize - 1, 2).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(GuestMemoryTest, ReadAndWriteAtTheEdges) {
  GuestMemory memory = MakeMemory();
  const std::array<uint8_t, 4> data = {1, 2, 3, 4};
  ASSERT_TRUE(memory.Write(0, data).ok());
  ASSERT_TRUE(memory.Write(kSize - data.size(), data).ok());

  std::array<uint8_t, 4> back = {};
  ASSERT_TRUE(memory.Read(0, back).ok());
  EXPECT_EQ(back, data);
  ASSERT_TRUE(memory.Read(kSize - back.size(), back).ok());
  EXPECT_EQ(back, data);

  // One byte past the end: refused, and nothing is written or read partially.
  const std::array<uint8_t, 4> other = {9, 9, 9, 9};
  EXPECT_EQ(memory.Write(kSize - 3, other).code(), absl::StatusCode::kOutOfRange);
  back = {};
  EXPECT_EQ(memory.Read(kSize - 3, back).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(back, (std::array<uint8_t, 4>{}));
  ASSERT_TRUE(memory.Read(kSize - back.size(), back).ok());
  EXPECT_EQ(back, data);

  // Zero-length accesses at the very end are fine; past it they are not.
  EXPECT_TRUE(memory.Write(kSize, {}).ok());
  EXPECT_TRUE(memory.Read(kSize, {}).ok());
  EXPECT_FALSE(memory.Write(kSize + 1, {}).ok());
  EXPECT_FALSE(memory.Read(kSize + 1, {}).ok());
  EXPECT_FALSE(memory.Read(kMax, back).ok());
}

TEST(GuestMemoryTest, FillAtTheEdges) {
  GuestMemory memory = MakeMemory();
  ASSERT_TRUE(memory.Fill(kSize - 4096, 0x5a, 4096).ok());
  absl::StatusOr<std::span<uint8_t>> page = memory.Span(kSize - 4096, 4096);
  ASSERT_TRUE(page.ok());
  for (uint8_t byte : *page) ASSERT_EQ(byte, 0x5a);
  absl::StatusOr<std::span<uint8_t>> before = memory.Span(kSize - 4097, 1);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ((*before)[0], 0);

  EXPECT_TRUE(memory.Fill(kSize, 0xff, 0).ok());
  EXPECT_EQ(memory.Fill(kSize - 1, 0xff, 2).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(memory.Fill(1, 0xff, kMax).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*page)[4095], 0x5a);  // the refused fills touched nothing
}

TEST(GuestMemoryTest, ObjectsAtTheEdges) {
  struct Pair {
    uint64_t first;
    uint32_t second;
    uint32_t third;
  };
  GuestMemory memory = MakeMemory();
  const uint64_t last_fit = kSize - sizeof(Pair);
  ASSERT_TRUE(memory.WriteObject(last_fit, Pair{0x1122334455667788, 7, 9}).ok());
  absl::StatusOr<Pair> back = memory.ReadObject<Pair>(last_fit);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->first, 0x1122334455667788u);
  EXPECT_EQ(back->second, 7u);
  EXPECT_EQ(back->third, 9u);

  EXPECT_EQ(memory.ReadObject<Pair>(last_fit + 1).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(memory.WriteObject(last_fit + 1, Pair{}).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(memory.ReadObject<uint64_t>(kMax - 3).status().code(),
            absl::StatusCode::kOutOfRange);
}

// A file of `size` bytes, each byte its offset's low byte, unlinked already: only the
// descriptor names it.
UniqueFd PatternFile(uint64_t size) {
  std::string path = ::testing::TempDir() + "/guest_memory_XXXXXX";
  UniqueFd fd(::mkstemp(path.data()));
  EXPECT_TRUE(fd.valid()) << path;
  ::unlink(path.c_str());
  for (uint64_t i = 0; i < size; ++i) {
    const uint8_t byte = static_cast<uint8_t>(i);
    EXPECT_EQ(::pwrite(fd.get(), &byte, 1, static_cast<off_t>(i)), 1);
  }
  return fd;
}

TEST(GuestMemoryTest, MapPrivateFileReadsTheFileAndKeepsWritesPrivate) {
  UniqueFd fd = PatternFile(kSize);
  absl::StatusOr<GuestMemory> memory = GuestMemory::MapPrivateFile(fd.get(), kSize);
  ASSERT_TRUE(memory.ok()) << memory.status();
  fd = UniqueFd(::dup(fd.get()));  // the mapping outlives the descriptor it came from
  EXPECT_EQ(memory->size(), kSize);
  EXPECT_EQ(*memory->ReadObject<uint8_t>(0x1234), 0x34);
  ASSERT_TRUE(memory->Fill(0, 0xee, kSize).ok());
  EXPECT_EQ(*memory->ReadObject<uint8_t>(0x1234), 0xee);
  uint8_t on_disk = 0;
  ASSERT_EQ(::pread(fd.get(), &on_disk, 1, 0x1234), 1);
  EXPECT_EQ(on_disk, 0x34);
  EXPECT_EQ(memory->Fill(kSize, 0, 1).code(), absl::StatusCode::kOutOfRange);
}

TEST(GuestMemoryTest, MapPrivateFileRefusesASizeTheFileDoesNotHave) {
  UniqueFd fd = PatternFile(kSize);
  EXPECT_EQ(GuestMemory::MapPrivateFile(fd.get(), kSize + 4096).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GuestMemory::MapPrivateFile(fd.get(), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GuestMemory::MapPrivateFile(fd.get(), 100).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GuestMemory::MapPrivateFile(-1, kSize).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(GuestMemory::MapPrivateFile(fd.get(), 4096).ok());  // a prefix is fine
}

}  // namespace
}  // namespace sigvisor
