#include "vmm/base/crc32c.h"

#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

using crc32c_internal::Crc32cHardware;
using crc32c_internal::Crc32cPortable;
using crc32c_internal::HasHardwareCrc32c;

std::span<const uint8_t> Bytes(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

std::vector<uint8_t> RandomBytes(size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  return bytes;
}

TEST(Crc32cTest, CheckValue) {
  EXPECT_EQ(Crc32c(Bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(Crc32cPortable(Bytes("123456789"), 0), 0xE3069283u);
  if (HasHardwareCrc32c()) {
    EXPECT_EQ(Crc32cHardware(Bytes("123456789"), 0), 0xE3069283u);
  }
}

// RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, IscsiVectors) {
  const std::vector<uint8_t> zeros(32, 0x00);
  const std::vector<uint8_t> ones(32, 0xff);
  std::vector<uint8_t> ascending(32);
  std::vector<uint8_t> descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<uint8_t>(i);
    descending[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(Crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32cTest, EmptyKeepsTheCrc) {
  EXPECT_EQ(Crc32c({}), 0u);
  EXPECT_EQ(Crc32c({}, 0x12345678), 0x12345678u);
  EXPECT_EQ(Crc32cPortable({}, 0x12345678), 0x12345678u);
}

TEST(Crc32cTest, IsIncremental) {
  const std::vector<uint8_t> bytes = RandomBytes(1000, 1);
  const uint32_t whole = Crc32c(bytes);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{500},
                     size_t{999}, size_t{1000}}) {
    const std::span<const uint8_t> all(bytes);
    EXPECT_EQ(Crc32c(all.subspan(cut), Crc32c(all.first(cut))), whole) << cut;
    EXPECT_EQ(Crc32cPortable(all.subspan(cut), Crc32cPortable(all.first(cut), 0)), whole) << cut;
  }
}

TEST(Crc32cTest, BothPathsAgreeOnEveryLengthAndAlignment) {
  if (!HasHardwareCrc32c()) GTEST_SKIP() << "this CPU has no SSE4.2";
  const std::vector<uint8_t> bytes = RandomBytes(4096 + 64, 2);
  const std::span<const uint8_t> all(bytes);
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t length = 0; length < 300; ++length) {
      const std::span<const uint8_t> piece = all.subspan(offset, length);
      ASSERT_EQ(Crc32cHardware(piece, 0), Crc32cPortable(piece, 0))
          << "offset " << offset << " length " << length;
      ASSERT_EQ(Crc32cHardware(piece, 0xdeadbeef), Crc32cPortable(piece, 0xdeadbeef))
          << "offset " << offset << " length " << length;
    }
  }
  for (uint32_t seed = 3; seed < 23; ++seed) {
    const std::vector<uint8_t> random = RandomBytes(1 + seed * 4099 % 70001, seed);
    const std::span<const uint8_t> piece = std::span<const uint8_t>(random).subspan(seed % 8);
    EXPECT_EQ(Crc32cHardware(piece, seed), Crc32cPortable(piece, seed)) << seed;
  }
}

TEST(Crc32cTest, SeesEveryFlippedBit) {
  std::vector<uint8_t> bytes = RandomBytes(64, 4);
  const uint32_t clean = Crc32c(bytes);
  for (size_t i = 0; i < bytes.size() * 8; ++i) {
    bytes[i / 8] ^= static_cast<uint8_t>(1u << (i % 8));
    EXPECT_NE(Crc32c(bytes), clean) << "bit " << i;
    bytes[i / 8] ^= static_cast<uint8_t>(1u << (i % 8));
  }
}

}  // namespace
}  // namespace sigvisor
