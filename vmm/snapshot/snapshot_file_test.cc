#include "vmm/snapshot/snapshot_file.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vmm/base/crc32c.h"

namespace sigvisor {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::string_view kWhat = "/x/state";

// Written by an encoder of its own (Python, from the layout in snapshot_file.h), not by
// EncodeSnapshotState: parts vcpu0 {1, 2, 3}, memory_index (a 0x2000-byte memory with
// one run) and empty {}.
const std::vector<uint8_t> kGolden = {
    0x53, 0x56, 0x53, 0x4e, 0x41, 0x50, 0x53, 0x48, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x76, 0x63, 0x70, 0x75, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1e, 0xf2, 0x30, 0xf1, 0x00, 0x00, 0x00, 0x00,
    0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x5f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa3, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x42, 0x2c, 0x7f, 0x1d, 0x00, 0x00, 0x00, 0x00,
    0x65, 0x6d, 0x70, 0x74, 0x79, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc3, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x02, 0x03, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xef,
    0xbe, 0xad, 0xde, 0xb3, 0x8f, 0xbc, 0x22,
};

std::vector<SnapshotPart> GoldenParts() {
  return {
      {"vcpu0", {1, 2, 3}},
      {"memory_index", {0x00, 0x20, 0, 0, 0,    0, 0, 0, 0x01, 0, 0, 0, 0x01, 0,    0,    0,
                        0,    0,    0, 0, 0x01, 0, 0, 0, 0,    0, 0, 0, 0xef, 0xbe, 0xad, 0xde}},
      {"empty", {}},
  };
}

std::vector<SnapshotPart> SomeParts() {
  std::mt19937 random(7);
  std::vector<SnapshotPart> parts;
  for (int i = 0; i < 6; ++i) {
    SnapshotPart part{.name = "part" + std::to_string(i), .bytes = {}};
    part.bytes.resize(i == 2 ? 0 : 1 + random() % 3000);
    for (uint8_t& b : part.bytes) b = static_cast<uint8_t>(random());
    parts.push_back(std::move(part));
  }
  parts.push_back({"vcpu0", std::vector<uint8_t>(100, 0)});
  parts.push_back({"abcdefghijklmnopqrstuvw", {42}});  // 23 characters, the most
  return parts;
}

void StoreU64(std::vector<uint8_t>& file, size_t at, uint64_t value) {
  for (int i = 0; i < 8; ++i) file[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

// The file's trailing checksum made right again, so that a test reaches the check it
// aims at.
void Reseal(std::vector<uint8_t>& file) {
  const uint32_t crc = Crc32c(std::span<const uint8_t>(file).first(file.size() - 4));
  for (int i = 0; i < 4; ++i) file[file.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
}

// Table entry `i`'s field at `field` (0 name, 24 offset, 32 size, 40 crc, 44 zero).
size_t EntryField(size_t i, size_t field) { return 16 + 48 * i + field; }

absl::Status Parse(const std::vector<uint8_t>& file) {
  return ParseSnapshotState(file, kWhat).status();
}

void ExpectOneLine(const absl::Status& status) {
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(std::string(status.message()).find('\n'), std::string::npos) << status;
}

std::string MakeTempDir() {
  std::string path = ::testing::TempDir() + "/snapshot_XXXXXX";
  EXPECT_NE(::mkdtemp(path.data()), nullptr) << path;
  return path;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* entry = ::readdir(d)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      names.push_back(entry->d_name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SnapshotFileTest, EncodesTheDocumentedLayout) {
  EXPECT_EQ(EncodeSnapshotState(GoldenParts()), kGolden);
  absl::StatusOr<std::vector<SnapshotPart>> parts = ParseSnapshotState(kGolden, kWhat);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(*parts, GoldenParts());
}

TEST(SnapshotFileTest, RoundTrip) {
  const std::vector<SnapshotPart> parts = SomeParts();
  absl::StatusOr<std::vector<SnapshotPart>> back =
      ParseSnapshotState(EncodeSnapshotState(parts), kWhat);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, parts);
}

TEST(SnapshotFileTest, NoPartsRoundTrip) {
  const std::vector<uint8_t> file = EncodeSnapshotState({});
  EXPECT_EQ(file.size(), 20u);
  absl::StatusOr<std::vector<SnapshotPart>> back = ParseSnapshotState(file, kWhat);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->empty());
}

TEST(SnapshotFileTest, RefusesAnotherKindOfFile) {
  for (std::string text : {std::string(),
                           std::string("\x7f"
                                       "ELF\x02\x01\x01",
                                       7),
                           std::string("SVSNAPSX") + std::string(100, '\0'),
                           std::string("svsnapsh") + std::string(100, '\0'), std::string("X")}) {
    const absl::Status status = Parse(std::vector<uint8_t>(text.begin(), text.end()));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(status.message(),
                HasSubstr("snapshot /x/state: is not a snapshot state file (it does not start "
                          "with 'SVSNAPSH')"));
    ExpectOneLine(status);
  }
}

TEST(SnapshotFileTest, RefusesAnotherFormatVersionNamingBoth) {
  std::vector<uint8_t> file = kGolden;
  file[8] = 3;
  Reseal(file);
  const absl::Status status = Parse(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(),
              HasSubstr("snapshot /x/state: is snapshot format version 3, and this build reads "
                        "version 2 only"));
  ExpectOneLine(status);
}

TEST(SnapshotFileTest, RefusesEveryTruncation) {
  for (size_t size = 1; size < kGolden.size(); ++size) {
    const std::vector<uint8_t> file(kGolden.begin(), kGolden.begin() + size);
    const absl::Status status = Parse(file);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << size << ": " << status;
    EXPECT_THAT(
        status.message(),
        AllOf(HasSubstr("snapshot /x/state: is truncated: " + std::to_string(size) + " bytes, "),
              HasSubstr("take the snapshot again")))
        << size;
    ExpectOneLine(status);
  }
}

TEST(SnapshotFileTest, TruncationMessagesSayWhatIsMissing) {
  EXPECT_THAT(Parse({kGolden.begin(), kGolden.begin() + 12}).message(),
              HasSubstr("is truncated: 12 bytes, less than a 16-byte header and a 4-byte "
                        "checksum"));
  EXPECT_THAT(Parse({kGolden.begin(), kGolden.begin() + 100}).message(),
              HasSubstr("is truncated: 100 bytes, its table of 3 parts needs 164, with the "
                        "checksum"));
  EXPECT_THAT(Parse({kGolden.begin(), kGolden.begin() + 170}).message(),
              HasSubstr("is truncated: 170 bytes, its part 'memory_index' (32 bytes at byte 163) "
                        "and the checksum need 199"));
}

TEST(SnapshotFileTest, RefusesEveryFlippedByte) {
  for (size_t at = 0; at < kGolden.size(); ++at) {
    for (uint8_t flip : {0x01, 0x80}) {
      std::vector<uint8_t> file = kGolden;
      file[at] ^= flip;
      const absl::Status status = Parse(file);
      EXPECT_FALSE(status.ok()) << "byte " << at << " ^ " << int(flip);
      ExpectOneLine(status);
    }
  }
}

TEST(SnapshotFileTest, FlippedPayloadByteNamesThePart) {
  std::vector<uint8_t> file = kGolden;
  file[0xa1] ^= 0x10;  // vcpu0's second byte
  const absl::Status status = Parse(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(status.message(),
            "snapshot /x/state: part 'vcpu0' fails its checksum: the file is corrupt or was "
            "edited; take the snapshot again");
}

TEST(SnapshotFileTest, FlippedTableBytes) {
  {
    std::vector<uint8_t> file = kGolden;
    file[EntryField(0, 4)] ^= 0x01;  // vcpu0 -> vcpu1: still a good name
    EXPECT_THAT(Parse(file).message(), HasSubstr("the file fails its checksum"));
  }
  {
    std::vector<uint8_t> file = kGolden;
    file[EntryField(1, 40)] ^= 0x01;  // memory_index's crc
    EXPECT_THAT(Parse(file).message(), HasSubstr("part 'memory_index' fails its checksum"));
  }
  {
    std::vector<uint8_t> file = kGolden;
    file[EntryField(2, 44)] = 1;
    EXPECT_THAT(Parse(file).message(),
                HasSubstr("part 'empty' has 0x1 in its table entry's zero field"));
  }
  {
    std::vector<uint8_t> file = kGolden;
    file[EntryField(0, 10)] = 'x';  // after the NUL that ends "vcpu0"
    EXPECT_THAT(Parse(file).message(),
                HasSubstr("table entry 0's name 'vcpu0' is followed by bytes other than NUL"));
  }
  {
    std::vector<uint8_t> file = kGolden;
    for (size_t i = 0; i < 24; ++i) file[EntryField(0, i)] = 'a';
    EXPECT_THAT(Parse(file).message(),
                HasSubstr("table entry 0's name has no NUL in its 24 bytes"));
  }
  {
    std::vector<uint8_t> file = kGolden;
    file[EntryField(0, 0)] = 0;
    EXPECT_THAT(Parse(file).message(), HasSubstr("table entry 0's name '' is empty"));
  }
}

TEST(SnapshotFileTest, RefusesNamesThatAreNotPrintable) {
  for (std::string name : {std::string("a b"), std::string("a\x01"), std::string("\xc3\xa9t")}) {
    const absl::Status status = Parse(EncodeSnapshotState({{{name, {1}}}}));
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << name;
    EXPECT_THAT(status.message(), HasSubstr("not a printable character")) << name;
    ExpectOneLine(status);
  }
}

TEST(SnapshotFileTest, RefusesDuplicateNames) {
  const absl::Status status = Parse(EncodeSnapshotState({{{"a", {1}}, {"b", {2}}, {"a", {3}}}}));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("part 'a' is in its table twice (entries 0 and 2)"));
}

TEST(SnapshotFileTest, RefusesOverlappingParts) {
  std::vector<uint8_t> file = EncodeSnapshotState({{{"a", {1, 2, 3, 4}}, {"b", {5, 6, 7, 8}}}});
  const size_t table_end = 16 + 2 * 48;
  StoreU64(file, EntryField(1, 24), table_end + 2);  // b starts inside a
  Reseal(file);
  EXPECT_THAT(Parse(file).message(),
              HasSubstr("parts 'a' (bytes 112-115) and 'b' (from byte 114) overlap"));

  // The same bytes for both.
  StoreU64(file, EntryField(1, 24), table_end);
  Reseal(file);
  EXPECT_THAT(Parse(file).message(), HasSubstr("overlap"));
}

TEST(SnapshotFileTest, RefusesBytesThatBelongToNoPart) {
  std::vector<uint8_t> file = EncodeSnapshotState({{{"a", {1, 2, 3, 4}}, {"b", {5, 6, 7, 8}}}});
  StoreU64(file, EntryField(1, 24), 16 + 2 * 48 + 5);  // a 1-byte gap, b's last byte cut
  StoreU64(file, EntryField(1, 32), 3);
  Reseal(file);
  EXPECT_THAT(Parse(file).message(),
              HasSubstr("bytes 116-116, before part 'b', belong to no part"));
}

TEST(SnapshotFileTest, RefusesAPartInsideTheTable) {
  std::vector<uint8_t> file = EncodeSnapshotState({{{"a", {1, 2, 3, 4}}}});
  StoreU64(file, EntryField(0, 24), 8);
  Reseal(file);
  EXPECT_THAT(Parse(file).message(),
              HasSubstr("part 'a' starts at byte 8, inside the header and table (bytes 0-63)"));
}

TEST(SnapshotFileTest, RefusesAPartPastTheEnd) {
  for (uint64_t offset : {uint64_t{1000}, ~uint64_t{0}, ~uint64_t{0} - 3}) {
    std::vector<uint8_t> file = EncodeSnapshotState({{{"a", {1, 2, 3, 4}}}});
    StoreU64(file, EntryField(0, 24), offset);
    Reseal(file);
    const absl::Status status = Parse(file);
    EXPECT_THAT(status.message(), HasSubstr("is truncated")) << offset;
  }
  std::vector<uint8_t> file = EncodeSnapshotState({{{"a", {1, 2, 3, 4}}}});
  StoreU64(file, EntryField(0, 32), ~uint64_t{0});
  Reseal(file);
  EXPECT_THAT(Parse(file).message(), HasSubstr("need more than 2^64"));
}

TEST(SnapshotFileTest, RefusesTrailingGarbage) {
  for (size_t extra : {1, 4, 100}) {
    std::vector<uint8_t> file = kGolden;
    file.insert(file.end(), extra, 0xab);
    const absl::Status status = Parse(file);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(status.message(),
                HasSubstr("has " + std::to_string(extra) + " bytes after its last part"));
    ExpectOneLine(status);
  }
}

TEST(SnapshotFileTest, RefusesAWrongFileChecksum) {
  std::vector<uint8_t> file = kGolden;
  file.back() ^= 1;
  EXPECT_EQ(Parse(file).message(),
            "snapshot /x/state: the file fails its checksum: the file is corrupt or was edited; "
            "take the snapshot again");
}

TEST(SnapshotFileTest, RefusesAHugePartCountWithoutAllocating) {
  std::vector<uint8_t> file = EncodeSnapshotState({});
  file[12] = file[13] = file[14] = file[15] = 0xff;
  Reseal(file);
  EXPECT_THAT(Parse(file).message(),
              HasSubstr("its table of 4294967295 parts needs 206158430180, with the checksum"));
}

TEST(SnapshotFileTest, FindsAPartOrSaysWhichIsMissing) {
  const std::vector<SnapshotPart> parts = GoldenParts();
  absl::StatusOr<const SnapshotPart*> found = FindSnapshotPart(parts, "memory_index", kWhat);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, &parts[1]);
  absl::StatusOr<const SnapshotPart*> missing = FindSnapshotPart(parts, "vcpu1", kWhat);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("snapshot /x/state has no part 'vcpu1'"));
}

TEST(SnapshotFileTest, ChecksNames) {
  EXPECT_TRUE(CheckSnapshotPartNames(SomeParts()).ok());
  const std::string too_long(24, 'a');
  for (const std::vector<SnapshotPart>& bad :
       {std::vector<SnapshotPart>{{"", {}}}, std::vector<SnapshotPart>{{too_long, {}}},
        std::vector<SnapshotPart>{{"a b", {}}}, std::vector<SnapshotPart>{{"a", {}}, {"a", {}}}}) {
    const absl::Status status = CheckSnapshotPartNames(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    ExpectOneLine(status);
  }
}

TEST(SnapshotFileTest, WritesAndReadsADirectory) {
  const std::string dir = MakeTempDir() + "/snap";  // created by the write
  const std::vector<SnapshotPart> parts = SomeParts();
  ASSERT_TRUE(WriteSnapshotState(dir, parts).ok());
  EXPECT_EQ(ListDir(dir), std::vector<std::string>{"state"});  // no temporary left
  struct stat st;
  ASSERT_EQ(::stat((dir + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  absl::StatusOr<std::vector<SnapshotPart>> back = ReadSnapshotState(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, parts);

  // Written again over the first: replaced whole.
  ASSERT_TRUE(WriteSnapshotState(dir + "/", GoldenParts()).ok());
  back = ReadSnapshotState(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, GoldenParts());
  EXPECT_EQ(ListDir(dir), std::vector<std::string>{"state"});
}

TEST(SnapshotFileTest, ReadRefusesWhatIsNotAStateFile) {
  const std::string dir = MakeTempDir();
  absl::StatusOr<std::vector<SnapshotPart>> missing = ReadSnapshotState(dir);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("cannot open snapshot state '" + dir + "/state': "));

  ASSERT_EQ(::mkdir((dir + "/state").c_str(), 0700), 0);
  absl::StatusOr<std::vector<SnapshotPart>> directory = ReadSnapshotState(dir);
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(directory.status().message(),
              HasSubstr("snapshot state '" + dir + "/state' is a directory, not a regular file"));

  // And the writer will not put a file in its place.
  const absl::Status write = WriteSnapshotState(dir, GoldenParts()).status();
  EXPECT_EQ(write.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(write.message(), HasSubstr("state' is a directory, not a regular file"));
  EXPECT_EQ(ListDir(dir), std::vector<std::string>{"state"});
}

TEST(SnapshotFileTest, ReadNamesTheFileWhenItIsCorrupt) {
  const std::string dir = MakeTempDir();
  std::vector<uint8_t> file = kGolden;
  file[0xa0] ^= 1;
  std::FILE* out = std::fopen((dir + "/state").c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(std::fwrite(file.data(), 1, file.size(), out), file.size());
  std::fclose(out);
  EXPECT_EQ(ReadSnapshotState(dir).status().message(),
            "snapshot " + dir +
                "/state: part 'vcpu0' fails its checksum: the file is corrupt or was edited; "
                "take the snapshot again");
}

TEST(SnapshotFileTest, WriteRefusesAFileAsTheDirectory) {
  const std::string file = MakeTempDir() + "/file";
  std::FILE* out = std::fopen(file.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  std::fclose(out);
  const absl::Status status = WriteSnapshotState(file, GoldenParts()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("snapshot directory '" + file + "' exists and is not a directory"));
  ExpectOneLine(status);
}

TEST(SnapshotFileTest, WriteCreatesOneLevelOnly) {
  const std::string dir = MakeTempDir() + "/a/b";
  const absl::Status status = WriteSnapshotState(dir, GoldenParts()).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("its parent must exist"));
}

TEST(SnapshotFileTest, WriteRefusesBadNamesAndWritesNothing) {
  const std::string dir = MakeTempDir();
  const absl::Status status = WriteSnapshotState(dir, {{{"a", {}}, {"a", {}}}}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("snapshot parts 0 and 1 are both named 'a'"));
  EXPECT_TRUE(ListDir(dir).empty());
}

TEST(SnapshotFileTest, WriteRefusesAStateFileItCouldNotReadBack) {
  const std::string dir = MakeTempDir();
  const std::vector<SnapshotPart> parts = {{"big", std::vector<uint8_t>(64 << 20)}};
  const absl::Status status = WriteSnapshotState(dir, parts).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("is larger than the 64 MiB a state file may hold"));
  EXPECT_TRUE(ListDir(dir).empty());
}

}  // namespace
}  // namespace sigvisor
