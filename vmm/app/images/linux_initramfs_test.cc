#include "vmm/app/images/linux_initramfs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string_view>

#include "guest-kit/linux/cpio_newc.h"

namespace sigvisor {
namespace {

// The embedded archive is what Linux needs: a newc archive with /dev/console and an
// executable static x86-64 ELF /init.
TEST(LinuxInitramfsTest, HoldsInitAndConsole) {
  std::span<const uint8_t> bytes = EmbeddedLinuxInitramfs();
  absl::StatusOr<std::vector<CpioEntry>> entries = ParseNewcArchive(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "dev");
  EXPECT_TRUE(S_ISDIR((*entries)[0].mode));
  EXPECT_EQ((*entries)[1].name, "dev/console");
  EXPECT_TRUE(S_ISCHR((*entries)[1].mode));
  EXPECT_EQ((*entries)[1].rdev_major, 5u);
  EXPECT_EQ((*entries)[1].rdev_minor, 1u);
  const CpioEntry& init = (*entries)[2];
  EXPECT_EQ(init.name, "init");
  EXPECT_EQ(init.mode, S_IFREG | 0755u);
  ASSERT_GT(init.data.size(), 64u);
  EXPECT_EQ(init.data.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(init.data[4], 2);     // ELFCLASS64
  EXPECT_EQ(init.data[16], 2);    // ET_EXEC: static, not position-independent
  EXPECT_EQ(init.data[18], 62);   // EM_X86_64
}

}  // namespace
}  // namespace sigvisor
