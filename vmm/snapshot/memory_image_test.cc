#include "vmm/snapshot/memory_image.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vmm/base/crc32c.h"
#include "vmm/base/unique_fd.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_parts.h"

namespace sigvisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kPages = 256;  // 1 MiB
constexpr uint64_t kSize = kPages * kPage;

std::string MakeTempDir() {
  std::string path = ::testing::TempDir() + "/memory_image_XXXXXX";
  EXPECT_NE(::mkdtemp(path.data()), nullptr) << path;
  return path;
}

std::string Message(const absl::Status& status) { return std::string(status.message()); }

// Guest memory with pages 0, 5-7 and 255 written (page 6 holds a single byte, the
// others a pattern), the rest zeros.
GuestMemory MakeGuest() {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(kSize);
  EXPECT_TRUE(memory.ok()) << memory.status();
  for (uint64_t page : {0, 5, 7, 255}) {
    for (uint64_t i = 0; i < kPage; ++i) {
      EXPECT_TRUE(memory->WriteObject<uint8_t>(page * kPage + i, uint8_t(page * 31 + i)).ok());
    }
  }
  EXPECT_TRUE(memory->WriteObject<uint8_t>(6 * kPage + 4095, 1).ok());
  return *std::move(memory);
}

std::span<const uint8_t> Bytes(const GuestMemory& memory) { return *memory.Span(0, memory.size()); }

void WriteFileAt(const std::string& path, uint64_t offset, std::vector<uint8_t> bytes) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << path;
  ASSERT_EQ(::pwrite(fd.get(), bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
}

uint8_t ReadFileByte(const std::string& path, uint64_t offset) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  uint8_t byte = 0xcc;
  EXPECT_EQ(::pread(fd.get(), &byte, 1, static_cast<off_t>(offset)), 1);
  return byte;
}

struct Written {
  std::string dir;
  MemoryImageIndex index;
};

Written WriteGuest(const GuestMemory& guest) {
  Written written{MakeTempDir(), {}};
  absl::StatusOr<MemoryImageIndex> index = WriteMemoryImage(written.dir, Bytes(guest));
  EXPECT_TRUE(index.ok()) << index.status();
  if (index.ok()) written.index = *std::move(index);
  return written;
}

TEST(MemoryImageTest, WritesOnlyTheNonZeroPagesInRuns) {
  const GuestMemory guest = MakeGuest();
  const std::string dir = MakeTempDir();
  MemoryImageStats stats;
  absl::StatusOr<MemoryImageIndex> index = WriteMemoryImage(dir, Bytes(guest), &stats);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->size, kSize);
  const auto crc = [&](uint64_t first, uint64_t count) {
    return Crc32c(Bytes(guest).subspan(first * kPage, count * kPage));
  };
  EXPECT_THAT(index->runs, ElementsAre(MemoryRun{0, 1, crc(0, 1)}, MemoryRun{5, 3, crc(5, 3)},
                                       MemoryRun{255, 1, crc(255, 1)}));
  EXPECT_EQ(index->touched_pages(), 5u);
  EXPECT_EQ(stats.touched_pages, 5u);

  struct stat st;
  ASSERT_EQ(::stat((dir + "/memory").c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kSize);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(stats.bytes_on_disk, uint64_t(st.st_blocks) * 512);
  // Sparse: the holes take no blocks (room left for file systems that allocate more
  // than a page at a time).
  EXPECT_GT(stats.bytes_on_disk, 0u);
  EXPECT_LT(stats.bytes_on_disk, kSize / 2);

  // The file's bytes are guest memory's, holes included.
  UniqueFd fd(::open((dir + "/memory").c_str(), O_RDONLY | O_CLOEXEC));
  std::vector<uint8_t> file(kSize);
  ASSERT_EQ(::pread(fd.get(), file.data(), file.size(), 0), static_cast<ssize_t>(kSize));
  EXPECT_TRUE(std::equal(file.begin(), file.end(), Bytes(guest).begin()));
}

TEST(MemoryImageTest, MapsWhatWasWritten) {
  const GuestMemory guest = MakeGuest();
  const Written written = WriteGuest(guest);
  MemoryImageStats stats;
  absl::StatusOr<GuestMemory> restored = MapMemoryImage(written.dir, written.index, &stats);
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_EQ(restored->size(), kSize);
  EXPECT_TRUE(std::equal(Bytes(guest).begin(), Bytes(guest).end(), Bytes(*restored).begin()));
  EXPECT_EQ(stats.touched_pages, 5u);
  EXPECT_GT(stats.bytes_on_disk, 0u);
}

TEST(MemoryImageTest, AllZeroAndAllWrittenMemory) {
  {
    absl::StatusOr<GuestMemory> zeros = GuestMemory::Create(16 * kPage);
    ASSERT_TRUE(zeros.ok());
    const Written written = WriteGuest(*zeros);
    EXPECT_TRUE(written.index.runs.empty());
    EXPECT_EQ(written.index.size, 16 * kPage);
    absl::StatusOr<GuestMemory> restored = MapMemoryImage(written.dir, written.index);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(*restored->ReadObject<uint64_t>(8 * kPage), 0u);
  }
  {
    absl::StatusOr<GuestMemory> full = GuestMemory::Create(16 * kPage);
    ASSERT_TRUE(full.ok());
    ASSERT_TRUE(full->Fill(0, 0x5a, 16 * kPage).ok());
    const Written written = WriteGuest(*full);
    EXPECT_THAT(written.index.runs, ElementsAre(MemoryRun{0, 16, Crc32c(Bytes(*full))}));
    absl::StatusOr<GuestMemory> restored = MapMemoryImage(written.dir, written.index);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(*restored->ReadObject<uint8_t>(16 * kPage - 1), 0x5a);
  }
}

TEST(MemoryImageTest, WritesToTheMappingStayPrivate) {
  const GuestMemory guest = MakeGuest();
  const Written written = WriteGuest(guest);
  absl::StatusOr<GuestMemory> first = MapMemoryImage(written.dir, written.index);
  absl::StatusOr<GuestMemory> second = MapMemoryImage(written.dir, written.index);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();

  ASSERT_TRUE(first->Fill(5 * kPage, 0xee, kPage).ok());    // a written page
  ASSERT_TRUE(first->Fill(100 * kPage, 0xee, kPage).ok());  // a hole
  EXPECT_EQ(*first->ReadObject<uint8_t>(5 * kPage), 0xee);

  const std::string path = written.dir + "/memory";
  EXPECT_EQ(ReadFileByte(path, 5 * kPage), uint8_t(5 * 31));
  EXPECT_EQ(ReadFileByte(path, 100 * kPage), 0);
  EXPECT_EQ(*second->ReadObject<uint8_t>(5 * kPage), uint8_t(5 * 31));
  EXPECT_EQ(*second->ReadObject<uint8_t>(100 * kPage), 0);
  // The file still passes every check: nothing reached it.
  EXPECT_TRUE(MapMemoryImage(written.dir, written.index).ok());
}

TEST(MemoryImageTest, ANewImageLeavesAMappedOneAlone) {
  const GuestMemory guest = MakeGuest();
  const Written written = WriteGuest(guest);
  absl::StatusOr<GuestMemory> restored = MapMemoryImage(written.dir, written.index);
  ASSERT_TRUE(restored.ok()) << restored.status();

  // Another snapshot into the same directory while the first is mapped: the mapping
  // keeps the old file, even for pages it has not touched yet.
  absl::StatusOr<GuestMemory> other = GuestMemory::Create(kSize);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(other->Fill(0, 0x77, kSize).ok());
  ASSERT_TRUE(WriteMemoryImage(written.dir, Bytes(*other)).ok());
  EXPECT_EQ(*restored->ReadObject<uint8_t>(7 * kPage + 1), uint8_t(7 * 31 + 1));
  EXPECT_EQ(*restored->ReadObject<uint8_t>(200 * kPage), 0);
}

TEST(MemoryImageTest, IndexRoundTrip) {
  const MemoryImageIndex index{.size = uint64_t{1} << 30,
                               .runs = {{0, 1, 0x11111111},
                                        {1, 2, 0x22222222},
                                        {100, 1000, 0},
                                        {(uint64_t{1} << 18) - 1, 1, 0xffffffff}}};
  const SnapshotPart part = EncodeMemoryIndex(index);
  EXPECT_EQ(part.name, kMemoryIndexPartName);
  EXPECT_EQ(part.bytes.size(), 8u + 4u + 4 * 20u);
  absl::StatusOr<MemoryImageIndex> back = DecodeMemoryIndex(part);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, index);

  // And as a part of the state file.
  absl::StatusOr<std::vector<SnapshotPart>> parts =
      ParseSnapshotState(EncodeSnapshotState({{part}}), "/x/state");
  ASSERT_TRUE(parts.ok()) << parts.status();
  absl::StatusOr<const SnapshotPart*> found =
      FindSnapshotPart(*parts, kMemoryIndexPartName, "/x/state");
  ASSERT_TRUE(found.ok()) << found.status();
  back = DecodeMemoryIndex(**found);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, index);
}

TEST(MemoryImageTest, DecodeRefusesAnIndexNoWriterMakes) {
  const uint64_t max = ~uint64_t{0};
  struct Case {
    MemoryImageIndex index;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{0, {}}, "memory size 0 is not a non-zero multiple of 4 KiB"},
      {{4097, {}}, "memory size 0x1001 is not a non-zero multiple of 4 KiB"},
      {{kSize, {{3, 0, 0}}}, "run 0 is empty"},
      {{kSize, {{0, 257, 0}}}, "run 0 (257 pages from page 0) ends past the memory's 0x100 pages"},
      {{kSize, {{256, 1, 0}}}, "run 0 (1 page from page 0x100) ends past the memory's 0x100 pages"},
      {{kSize, {{max, 2, 0}}}, "run 0 (2 pages from page 0xffffffffffffffff) ends past"},
      {{kSize, {{1, max, 0}}}, "run 0 (18446744073709551615 pages from page 0x1) ends past"},
      {{kSize, {{5, 2, 0}, {6, 1, 0}}},
       "run 1 (from page 0x6) starts before run 0 ends (page 0x7)"},
      {{kSize, {{5, 2, 0}, {1, 1, 0}}}, "run 1 (from page 0x1) starts before run 0 ends"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<MemoryImageIndex> decoded = DecodeMemoryIndex(EncodeMemoryIndex(c.index));
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << c.says;
    EXPECT_THAT(Message(decoded.status()), HasSubstr("part 'memory_index': " + c.says));
    // MapMemoryImage holds an index it is given to the same rules.
    const absl::StatusOr<GuestMemory> mapped = MapMemoryImage("/nonexistent", c.index);
    EXPECT_EQ(mapped.status().code(), absl::StatusCode::kInvalidArgument) << c.says;
    EXPECT_THAT(Message(mapped.status()), HasSubstr("memory image index: " + c.says));
  }
  // Adjacent runs are fine (a writer may split a run).
  EXPECT_TRUE(DecodeMemoryIndex(EncodeMemoryIndex({kSize, {{5, 2, 0}, {7, 1, 0}}})).ok());
}

TEST(MemoryImageTest, DecodeRefusesABadPayload) {
  SnapshotPart part = EncodeMemoryIndex({kSize, {{5, 2, 0}}});
  {
    SnapshotPart extra = part;
    extra.bytes.push_back(0);
    EXPECT_THAT(Message(DecodeMemoryIndex(extra).status()),
                HasSubstr("part 'memory_index' has 1 bytes after its last field"));
  }
  {
    SnapshotPart cut = part;
    cut.bytes.pop_back();
    EXPECT_FALSE(DecodeMemoryIndex(cut).ok());
  }
  {
    SnapshotPart many = part;
    many.bytes[8] = many.bytes[9] = many.bytes[10] = many.bytes[11] = 0xff;  // the count
    EXPECT_THAT(Message(DecodeMemoryIndex(many).status()),
                HasSubstr("4294967295 memory runs of at least 20 bytes each do not fit"));
  }
  EXPECT_FALSE(DecodeMemoryIndex({"memory_index", {}}).ok());
}

TEST(MemoryImageTest, RefusesAMemoryFileOfTheWrongSize) {
  const Written written = WriteGuest(MakeGuest());
  const std::string path = written.dir + "/memory";
  ASSERT_EQ(::truncate(path.c_str(), kSize + kPage), 0);
  absl::StatusOr<GuestMemory> mapped = MapMemoryImage(written.dir, written.index);
  EXPECT_EQ(mapped.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Message(mapped.status()),
              HasSubstr("snapshot memory image '" + path +
                        "' is 1052672 bytes, and the snapshot's state says 1048576"));
  ASSERT_EQ(::truncate(path.c_str(), kSize - kPage), 0);
  EXPECT_THAT(Message(MapMemoryImage(written.dir, written.index).status()),
              HasSubstr("is 1044480 bytes, and the snapshot's state says 1048576"));
}

TEST(MemoryImageTest, RefusesARunWhoseChecksumFails) {
  const Written written = WriteGuest(MakeGuest());
  WriteFileAt(written.dir + "/memory", 6 * kPage + 10, {0x42});
  absl::StatusOr<GuestMemory> mapped = MapMemoryImage(written.dir, written.index);
  EXPECT_EQ(mapped.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Message(mapped.status()),
              HasSubstr("pages 0x5-0x7 (guest 0x5000-0x7fff) fail their checksum: the file is "
                        "corrupt or was changed after the snapshot was taken; take the snapshot "
                        "again"));
  EXPECT_EQ(Message(mapped.status()).find('\n'), std::string::npos);

  // Or the index's checksum is what is wrong.
  const Written again = WriteGuest(MakeGuest());
  MemoryImageIndex index = again.index;
  index.runs[2].crc32c ^= 1;
  EXPECT_THAT(Message(MapMemoryImage(again.dir, index).status()),
              HasSubstr("page 0xff (guest 0xff000-0xfffff) fails its checksum"));
}

TEST(MemoryImageTest, RefusesDataWrittenIntoAHole) {
  for (uint64_t page : {uint64_t{1}, uint64_t{4}, uint64_t{8}, uint64_t{100}, uint64_t{254}}) {
    const Written written = WriteGuest(MakeGuest());
    WriteFileAt(written.dir + "/memory", page * kPage + 123, {0x01});
    absl::StatusOr<GuestMemory> mapped = MapMemoryImage(written.dir, written.index);
    EXPECT_EQ(mapped.status().code(), absl::StatusCode::kDataLoss) << page;
    EXPECT_THAT(Message(mapped.status()),
                HasSubstr(absl::StrFormat("page %#x (guest %#x-%#x) holds data where the "
                                          "snapshot left a hole",
                                          page, page * kPage, page * kPage + kPage - 1)))
        << page;
  }
}

TEST(MemoryImageTest, ZerosWrittenIntoTheHolesAreAccepted) {
  // A file system that reports no holes looks like this one: data everywhere, and the
  // pages outside the runs are read and found to be zeros.
  const GuestMemory guest = MakeGuest();
  const Written written = WriteGuest(guest);
  const std::string path = written.dir + "/memory";
  for (uint64_t page = 0; page < kPages; ++page) {
    const bool in_run = page == 0 || (page >= 5 && page <= 7) || page == 255;
    if (!in_run) WriteFileAt(path, page * kPage, std::vector<uint8_t>(kPage, 0));
  }
  absl::StatusOr<GuestMemory> mapped = MapMemoryImage(written.dir, written.index);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_TRUE(std::equal(Bytes(guest).begin(), Bytes(guest).end(), Bytes(*mapped).begin()));

  // And a non-zero byte among them is found the same way.
  WriteFileAt(path, 200 * kPage + 4095, {0x80});
  EXPECT_THAT(Message(MapMemoryImage(written.dir, written.index).status()),
              HasSubstr("page 0xc8 (guest 0xc8000-0xc8fff) holds data where the snapshot left "
                        "a hole"));
}

TEST(MemoryImageTest, RefusesWhatIsNotAMemoryFile) {
  const std::string dir = MakeTempDir();
  const MemoryImageIndex index{.size = kSize, .runs = {}};
  absl::StatusOr<GuestMemory> missing = MapMemoryImage(dir, index);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(missing.status()),
              HasSubstr("cannot open snapshot memory image '" + dir + "/memory': "));

  ASSERT_EQ(::mkdir((dir + "/memory").c_str(), 0700), 0);
  absl::StatusOr<GuestMemory> directory = MapMemoryImage(dir, index);
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      Message(directory.status()),
      HasSubstr("snapshot memory image '" + dir + "/memory' is a directory, not a regular file"));

  // The writer will not replace a directory either.
  absl::StatusOr<GuestMemory> guest = GuestMemory::Create(kSize);
  ASSERT_TRUE(guest.ok());
  absl::StatusOr<MemoryImageIndex> written = WriteMemoryImage(dir, Bytes(*guest));
  EXPECT_EQ(written.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(written.status()), HasSubstr("memory' is a directory, not a regular file"));
}

TEST(MemoryImageTest, WriteRefusesBadSizesAndAFileAsTheDirectory) {
  const std::vector<uint8_t> odd(4097, 1);
  EXPECT_EQ(WriteMemoryImage(MakeTempDir(), odd).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteMemoryImage(MakeTempDir(), {}).status().code(),
            absl::StatusCode::kInvalidArgument);

  const std::string file = MakeTempDir() + "/file";
  UniqueFd fd(::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid());
  const std::vector<uint8_t> page(kPage, 1);
  const absl::StatusOr<MemoryImageIndex> written = WriteMemoryImage(file, page);
  EXPECT_EQ(written.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(written.status()), HasSubstr("exists and is not a directory"));
}

// A 256 MiB guest with a few pages touched: written and restored without a buffer of
// its size (the peak RSS grows by far less), into a file that holds only those pages.
TEST(MemoryImageTest, ALargeGuestStreams) {
  constexpr uint64_t kGuest = uint64_t{256} << 20;
  absl::StatusOr<GuestMemory> guest = GuestMemory::Create(kGuest);
  ASSERT_TRUE(guest.ok()) << guest.status();
  for (uint64_t gpa : {uint64_t{0}, uint64_t{12345} * kPage, kGuest - kPage}) {
    ASSERT_TRUE(guest->Fill(gpa, 0xa5, kPage).ok());
  }
  // Read all of it first: some kernels (the one this test was written on among them)
  // give a read of untouched anonymous memory a page of its own rather than the shared
  // zero page, and the write's scan for zero pages would otherwise count here.
  uint64_t sum = 0;
  for (uint64_t gpa = 0; gpa < kGuest; gpa += kPage) sum += *guest->ReadObject<uint8_t>(gpa);
  EXPECT_EQ(sum, 3u * 0xa5);
  struct rusage before;
  ASSERT_EQ(::getrusage(RUSAGE_SELF, &before), 0);

  const std::string dir = MakeTempDir();
  MemoryImageStats stats;
  absl::StatusOr<MemoryImageIndex> index = WriteMemoryImage(dir, Bytes(*guest), &stats);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->runs.size(), 3u);
  EXPECT_EQ(stats.touched_pages, 3u);
  EXPECT_LT(stats.bytes_on_disk, uint64_t{16} << 20);
  absl::StatusOr<GuestMemory> restored = MapMemoryImage(dir, *index, &stats);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(*restored->ReadObject<uint8_t>(12345 * kPage + 7), 0xa5);
  EXPECT_EQ(*restored->ReadObject<uint8_t>(12346 * kPage), 0);

  struct rusage after;
  ASSERT_EQ(::getrusage(RUSAGE_SELF, &after), 0);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 32 << 10) << "KiB";  // 32 MiB
}

}  // namespace
}  // namespace sigvisor
