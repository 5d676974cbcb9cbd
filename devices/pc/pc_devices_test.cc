#include <cstdint>
#include <vector>

#include "devices/pc/fw_cfg.h"
#include "devices/pc/pc_stubs.h"
#include "gtest/gtest.h"

namespace sigvisor {
namespace {

void Select(FwCfg& fw, uint16_t key) {
  const uint8_t bytes[2] = {static_cast<uint8_t>(key), static_cast<uint8_t>(key >> 8)};
  ASSERT_TRUE(fw.Write(0, bytes).ok());
}

std::vector<uint8_t> ReadBytes(FwCfg& fw, size_t n) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < n; ++i) {
    uint8_t b = 0xaa;
    EXPECT_TRUE(fw.Read(1, std::span<uint8_t>(&b, 1)).ok());
    out.push_back(b);
  }
  return out;
}

TEST(FwCfgTest, SignatureCpusAndRam) {
  FwCfg fw(32ull << 20, 3);
  Select(fw, FwCfg::kSignature);
  EXPECT_EQ(ReadBytes(fw, 5), (std::vector<uint8_t>{'Q', 'E', 'M', 'U', 0}));
  Select(fw, FwCfg::kNbCpus);
  EXPECT_EQ(ReadBytes(fw, 2), (std::vector<uint8_t>{3, 0}));
  Select(fw, FwCfg::kRamSize);
  EXPECT_EQ(ReadBytes(fw, 8), (std::vector<uint8_t>{0, 0, 0, 2, 0, 0, 0, 0}));
  Select(fw, 0x1234);  // unknown: zeros
  EXPECT_EQ(ReadBytes(fw, 2), (std::vector<uint8_t>{0, 0}));
}

TEST(FwCfgTest, ByteWideSelectorWriteIsRefused) {
  FwCfg fw(1 << 20, 1);
  const uint8_t one = 5;
  EXPECT_FALSE(fw.Write(0, std::span<const uint8_t>(&one, 1)).ok());
  EXPECT_FALSE(fw.Write(1, std::span<const uint8_t>(&one, 1)).ok());
}

TEST(PcStubsTest, PicKeepsTheMaskAndPciReadsAllOnes) {
  PicMasks pic;
  const uint8_t mask = 0xfb;
  ASSERT_TRUE(pic.Write(1, std::span<const uint8_t>(&mask, 1)).ok());
  uint8_t b = 0;
  ASSERT_TRUE(pic.Read(1, std::span<uint8_t>(&b, 1)).ok());
  EXPECT_EQ(b, 0xfb);
  ASSERT_TRUE(pic.Read(0, std::span<uint8_t>(&b, 1)).ok());
  EXPECT_EQ(b, 0);

  PciAbsent pci;
  const uint8_t addr[4] = {0x00, 0x00, 0x00, 0x80};
  ASSERT_TRUE(pci.Write(0, addr).ok());
  uint8_t back[4] = {};
  ASSERT_TRUE(pci.Read(0, back).ok());
  EXPECT_EQ(back[3], 0x80);
  uint8_t data[4] = {};
  ASSERT_TRUE(pci.Read(4, data).ok());
  EXPECT_EQ(data[0], 0xff);
  EXPECT_EQ(data[3], 0xff);
}

}  // namespace
}  // namespace sigvisor
