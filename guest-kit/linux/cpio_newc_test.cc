#include "guest-kit/linux/cpio_newc.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

namespace sigvisor {
namespace {

CpioEntry File(std::string name, std::string data) {
  return CpioEntry{.name = std::move(name), .mode = S_IFREG | 0755, .data = std::move(data)};
}

TEST(CpioNewcTest, WritesSortedAndParsesBack) {
  std::vector<CpioEntry> entries = {
      File("init", "\x7f" "ELF..."),
      CpioEntry{.name = "dev/console", .mode = S_IFCHR | 0600, .rdev_major = 5, .rdev_minor = 1},
      CpioEntry{.name = "dev", .mode = S_IFDIR | 0755},
  };
  absl::StatusOr<std::string> archive = WriteNewcArchive(entries);
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ(archive->size() % 4, 0u);
  absl::StatusOr<std::vector<CpioEntry>> parsed = ParseNewcArchive(*archive);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0], entries[2]);  // sorted: a directory before what it holds
  EXPECT_EQ((*parsed)[1], entries[1]);
  EXPECT_EQ((*parsed)[2], entries[0]);
}

// The header of the first entry, field by field, as Linux reads it.
TEST(CpioNewcTest, HeaderFields) {
  absl::StatusOr<std::string> archive = WriteNewcArchive({File("a", "xyz")});
  ASSERT_TRUE(archive.ok());
  EXPECT_EQ(archive->substr(0, 110),
            "070701"
            "00000001"   // ino
            "000081ED"   // mode: S_IFREG | 0755
            "00000000"   // uid
            "00000000"   // gid
            "00000001"   // nlink
            "00000000"   // mtime
            "00000003"   // filesize
            "00000000"   // devmajor
            "00000000"   // devminor
            "00000000"   // rdevmajor
            "00000000"   // rdevminor
            "00000002"   // namesize, with the NUL
            "00000000");  // check
  // Name "a\0" then padding to 4 (110 + 2 -> 112), the data, padding (115 -> 116).
  EXPECT_EQ(archive->substr(110, 6), std::string("a\0xyz\0", 6));
  EXPECT_EQ(archive->substr(116, 6), "070701");  // the trailer's header
  EXPECT_NE(archive->find("TRAILER!!!"), std::string::npos);
}

TEST(CpioNewcTest, Deterministic) {
  absl::StatusOr<std::string> one = WriteNewcArchive({File("b", "1"), File("a", "2")});
  absl::StatusOr<std::string> two = WriteNewcArchive({File("a", "2"), File("b", "1")});
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(*one, *two);
}

TEST(CpioNewcTest, RefusesBadEntries) {
  EXPECT_FALSE(WriteNewcArchive({File("/init", "")}).ok());
  EXPECT_FALSE(WriteNewcArchive({File("", "")}).ok());
  EXPECT_FALSE(WriteNewcArchive({File("a", ""), File("a", "")}).ok());
  EXPECT_FALSE(WriteNewcArchive({File("TRAILER!!!", "")}).ok());
  EXPECT_FALSE(
      WriteNewcArchive({CpioEntry{.name = "d", .mode = S_IFDIR | 0755, .data = "x"}}).ok());
}

TEST(CpioNewcTest, RefusesMalformedArchives) {
  absl::StatusOr<std::string> archive = WriteNewcArchive({File("init", "abcdefgh")});
  ASSERT_TRUE(archive.ok());
  // Every truncation is refused, never read past.
  for (size_t n = 0; n < archive->size(); ++n) {
    EXPECT_FALSE(ParseNewcArchive(archive->substr(0, n)).ok()) << n;
  }
  std::string bad_magic = *archive;
  bad_magic[5] = '2';
  EXPECT_FALSE(ParseNewcArchive(bad_magic).ok());
  std::string bad_hex = *archive;
  bad_hex[10] = 'z';
  EXPECT_FALSE(ParseNewcArchive(bad_hex).ok());
  std::string huge_size = *archive;
  huge_size.replace(6 + 6 * 8, 8, "FFFFFFFF");  // filesize
  EXPECT_FALSE(ParseNewcArchive(huge_size).ok());
}

}  // namespace
}  // namespace sigvisor
