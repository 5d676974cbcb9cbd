#include "vmm/base/capped_file.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = TempPath(name);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  EXPECT_NE(file, nullptr) << path;
  if (file == nullptr) return path;
  EXPECT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  std::fclose(file);
  return path;
}

const FileRole kModule{.context = "--module: "};
const FileRole kImage{.noun = "image"};

TEST(CappedFileTest, ReadsARegularFile) {
  std::string bytes(100000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  const std::string path = WriteFile("regular", bytes);
  absl::StatusOr<std::string> read = ReadCappedFile(path, 1 << 20);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
  absl::StatusOr<std::vector<uint8_t>> as_bytes = ReadCappedFileBytes(path, 1 << 20);
  ASSERT_TRUE(as_bytes.ok()) << as_bytes.status();
  EXPECT_EQ(std::string(as_bytes->begin(), as_bytes->end()), bytes);
}

TEST(CappedFileTest, ReadsAnEmptyFile) {
  absl::StatusOr<std::string> read = ReadCappedFile(WriteFile("empty", ""), 16);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "");
  absl::StatusOr<std::string> capped_at_zero = ReadCappedFile(WriteFile("empty0", ""), 0);
  ASSERT_TRUE(capped_at_zero.ok()) << capped_at_zero.status();
}

TEST(CappedFileTest, AFileExactlyAtTheCapIsRead) {
  const std::string bytes(4096, 'x');
  absl::StatusOr<std::string> read = ReadCappedFile(WriteFile("at_cap", bytes), 4096);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
}

TEST(CappedFileTest, AFileOverTheCapIsRefusedNamingTheCap) {
  const std::string path = WriteFile("over_cap", std::string(4097, 'x'));
  absl::StatusOr<std::string> read = ReadCappedFile(path, 4096, kImage);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(), "image '" + path + "' is larger than 4 KiB");
  absl::StatusOr<std::string> mib = ReadCappedFile(path, 0, kModule);
  ASSERT_FALSE(mib.ok());
  EXPECT_EQ(mib.status().message(), "--module: '" + path + "' is larger than 0 bytes");
}

// procfs files say their size is 0: the cap holds on what is read, not on st_size.
TEST(CappedFileTest, TheCapHoldsForFilesThatDoNotKnowTheirSize) {
  absl::StatusOr<std::string> status = ReadCappedFile("/proc/self/status", 1 << 20);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_THAT(*status, HasSubstr("Name:"));
  absl::StatusOr<std::string> capped = ReadCappedFile("/proc/self/status", 100);
  ASSERT_FALSE(capped.ok());
  EXPECT_THAT(capped.status().message(), HasSubstr("is larger than 100 bytes"));
}

TEST(CappedFileTest, ADirectoryIsRefused) {
  const std::string dir = TempPath("a_directory");
  ::mkdir(dir.c_str(), 0755);
  absl::StatusOr<std::string> read = ReadCappedFile(dir, 1 << 20, kModule);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(),
            "--module: '" + dir + "' is a directory, not a regular file");
}

TEST(CappedFileTest, ACharacterDeviceIsRefusedUnread) {
  absl::StatusOr<std::string> read = ReadCappedFile("/dev/zero", 1 << 20, kImage);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(),
            "image '/dev/zero' is a character device, not a regular file");
  // Even with no cap to speak of: it is never read.
  EXPECT_FALSE(ReadCappedFile("/dev/zero", UINT64_MAX).ok());
}

// With no writer, opening the FIFO would block for ever: it is refused first.
TEST(CappedFileTest, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = TempPath("a_fifo");
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  absl::StatusOr<std::string> read = ReadCappedFile(fifo, 1 << 20);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "'" + fifo + "' is a FIFO, not a regular file");
}

TEST(CappedFileTest, AMissingFileIsNotFound) {
  absl::StatusOr<std::string> read = ReadCappedFile("/nonexistent/file", 1 << 20, kModule);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(read.status().message(),
            "--module: cannot open '/nonexistent/file': No such file or directory");
  const FileRole map{.noun = "the System.map", .cannot_open = "cannot read"};
  absl::StatusOr<std::string> missing_map = ReadCappedFile("/nonexistent/System.map", 1, map);
  EXPECT_EQ(missing_map.status().message(),
            "cannot read the System.map '/nonexistent/System.map': No such file or directory");
}

TEST(CappedFileTest, CapText) {
  EXPECT_EQ(CapText(256ull << 20), "256 MiB");
  EXPECT_EQ(CapText(4096), "4 KiB");
  EXPECT_EQ(CapText(1), "1 byte");
  EXPECT_EQ(CapText(1000), "1000 bytes");
  EXPECT_EQ(CapText(0), "0 bytes");
}

}  // namespace
}  // namespace sigvisor
