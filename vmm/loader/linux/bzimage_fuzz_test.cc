// The fuzz target outside libFuzzer: its seed corpus (tests/fuzz/corpus/bzimage_fuzz) replayed, each
// seed checked to be what its name says, and every header byte of a good bzImage
// mutated, so that the target keeps building and its inputs keep passing in every
// configuration (under --config=asan too).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vmm/loader/linux/bzimage.h"
#include "vmm/loader/linux/bzimage_for_test.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace sigvisor::linux_boot {
namespace {

using ::sigvisor::linux_boot::testing::Build;
using ::sigvisor::linux_boot::testing::Data;
using ::sigvisor::linux_boot::testing::Spec;

constexpr char kCorpus[] = "tests/fuzz/corpus/bzimage_fuzz";

Data ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(BzImageFuzzTest, SeedsAreWhatTheirNamesSay) {
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpus)) {
    const Data bytes = ReadFile(entry.path());
    const std::string name = entry.path().filename().string();
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++seeds;
    if (entry.path().extension() != ".bzimage") continue;
    absl::StatusOr<BzImage> image = ParseBzImage(bytes);
    if (name == "lz4.bzimage") {
      EXPECT_THAT(std::string(image.status().message()), ::testing::HasSubstr("lz4-compressed"));
    } else {
      ASSERT_TRUE(image.ok()) << name << ": " << image.status();
      EXPECT_EQ(std::string(CompressionName(image->compression)) + ".bzimage",
                name == "protocol_2_12.bzimage" ? "gzip.bzimage" : name);
    }
  }
  EXPECT_EQ(seeds, 7);
}

TEST(BzImageFuzzTest, EveryHeaderByteMutated) {
  const Data good = Build(Spec{});
  for (size_t offset = 0x1f1; offset < 0x26c; ++offset) {
    for (uint8_t value : {uint8_t{0x00}, uint8_t{0xff}, uint8_t(good[offset] ^ 0x80)}) {
      Data bytes = good;
      bytes[offset] = value;
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    }
  }
}

}  // namespace
}  // namespace sigvisor::linux_boot
