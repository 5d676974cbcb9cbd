// Debian's own kernel through the whole host-side path: its bzImage parsed, its xz
// payload decompressed, the vmlinux parsed by ElfImage and loaded by p_paddr. The
// kernel is the one tools/setup.sh fetches for the hardware lane (into
// $SIGVISOR_LANE_CACHE, by default /var/cache/sigvisor/hwkvm, unpacked there by
// tests/hwkvm/lane.sh); where it is absent the test is skipped, saying so.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "vmm/loader/elf_image.h"
#include "vmm/loader/elf_loader.h"
#include "vmm/loader/linux/bzimage.h"
#include "vmm/loader/linux/debian_kernel_for_test.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::linux_boot {
namespace {

TEST(DebianKernelTest, DecompressesParsesAndLoads) {
  const std::optional<testing::DebianKernel> kernel = testing::FindDebianKernel();
  if (!kernel) GTEST_SKIP() << testing::kNoDebianKernel;
  const std::filesystem::path& path = kernel->vmlinuz;
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  ASSERT_TRUE(LooksLikeBzImage(file)) << path;

  absl::StatusOr<BzImage> bz = ParseBzImage(file);
  ASSERT_TRUE(bz.ok()) << path << ": " << bz.status();
  EXPECT_GE(bz->protocol_version, kMinProtocol);
  EXPECT_NE(bz->xloadflags & kXlfKernel64, 0);
  EXPECT_TRUE(bz->relocatable);
  EXPECT_EQ(bz->compression, Compression::kXz);  // every Debian 12 kernel

  absl::StatusOr<ElfImage> vmlinux = ElfImage::Parse(bz->vmlinux);
  ASSERT_TRUE(vmlinux.ok()) << path << ": " << vmlinux.status();
  EXPECT_TRUE(vmlinux->bootable());
  EXPECT_EQ(vmlinux->abi_version(), std::nullopt);
  EXPECT_FALSE(vmlinux->multiboot().has_value());
  // Loaded where the setup header prefers, entered at its start (startup_64), and
  // within the memory the header asks for.
  EXPECT_EQ(vmlinux->load_begin(), bz->pref_address);
  EXPECT_EQ(vmlinux->entry(), bz->pref_address);
  EXPECT_LE(vmlinux->load_end() - vmlinux->load_begin(), bz->init_size);
  // Debian builds with CONFIG_PVH: the vmlinux also has a PVH entry, inside the kernel.
  ASSERT_TRUE(vmlinux->pvh_entry().has_value());
  EXPECT_GE(*vmlinux->pvh_entry(), vmlinux->load_begin());
  EXPECT_LT(*vmlinux->pvh_entry(), vmlinux->load_end());

  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(vmlinux->load_end() + (1 << 20));
  ASSERT_TRUE(memory.ok()) << memory.status();
  ASSERT_TRUE(LoadElfImage(*vmlinux, *memory).ok());
  for (const ElfSegment& segment : vmlinux->segments()) {
    absl::StatusOr<std::span<const uint8_t>> placed =
        std::as_const(*memory).Span(segment.paddr, segment.filesz);
    ASSERT_TRUE(placed.ok()) << placed.status();
    EXPECT_TRUE(std::equal(placed->begin(), placed->end(), segment.file_bytes.begin()))
        << "segment at paddr 0x" << std::hex << segment.paddr;
  }
}

}  // namespace
}  // namespace sigvisor::linux_boot
