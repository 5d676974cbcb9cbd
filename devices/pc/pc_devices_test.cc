#include <cstdint>
#include <vector>

#include "devices/pc/fw_cfg.h"
#include "devices/pc/pc_stubs.h"
#include "devices/pc/unclaimed.h"
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

TEST(PcStubsTest, PciAddressRegisterIsOneDwordAndNoDeviceAnswers) {
  PciAbsent pci;
  // Linux's pci_check_type1: a byte at 0xcfb, then the dword read back.
  const uint8_t mechanism[1] = {0x01};
  ASSERT_TRUE(pci.Write(3, mechanism).ok());
  uint8_t dword[4] = {0xee, 0xee, 0xee, 0xee};
  ASSERT_TRUE(pci.Read(0, dword).ok());
  EXPECT_EQ(std::vector<uint8_t>(dword, dword + 4), (std::vector<uint8_t>{0, 0, 0, 0}));
  const uint8_t enable[4] = {0x00, 0x00, 0x00, 0x80};
  ASSERT_TRUE(pci.Write(0, enable).ok());
  ASSERT_TRUE(pci.Read(0, dword).ok());
  EXPECT_EQ(std::vector<uint8_t>(dword, dword + 4), (std::vector<uint8_t>{0, 0, 0, 0x80}));
  uint8_t high_byte[1] = {};
  ASSERT_TRUE(pci.Read(3, high_byte).ok());
  EXPECT_EQ(high_byte[0], 0x80);

  // Vendor and device ID of 00:00.0 and of every other function: all-ones.
  const uint8_t device[4] = {0x00, 0x08, 0x00, 0x80};  // 00:01.0, register 0
  ASSERT_TRUE(pci.Write(0, device).ok());
  uint8_t id[2] = {};
  ASSERT_TRUE(pci.Read(4, id).ok());
  EXPECT_EQ(id[0], 0xff);
  EXPECT_EQ(id[1], 0xff);
  uint8_t class_code[2] = {};
  ASSERT_TRUE(pci.Read(6, class_code).ok());  // 0xcfe: PCI_CLASS_DEVICE's half
  EXPECT_EQ(class_code[0], 0xff);
  const uint8_t ignored[4] = {1, 2, 3, 4};
  ASSERT_TRUE(pci.Write(4, ignored).ok());  // config writes go nowhere
  ASSERT_TRUE(pci.Read(4, id).ok());
  EXPECT_EQ(id[0], 0xff);
  ASSERT_TRUE(pci.Read(0, dword).ok());
  EXPECT_EQ(dword[1], 0x08);  // the address register is untouched by them
  EXPECT_EQ(pci.AccessName(0), "pci-config address");
  EXPECT_EQ(pci.AccessName(4), "pci-config data");
}

TEST(UnclaimedTest, ReadsAllOnesAtAnyWidthAndDropsWrites) {
  Unclaimed unclaimed;
  EXPECT_EQ(unclaimed.name(), "unclaimed");
  EXPECT_EQ(unclaimed.AccessName(0x61), "unclaimed");
  uint8_t bytes[8] = {};
  ASSERT_TRUE(unclaimed.Read(0x61, std::span<uint8_t>(bytes, 1)).ok());
  EXPECT_EQ(bytes[0], 0xff);
  ASSERT_TRUE(unclaimed.Read(0xfed00000, bytes).ok());
  for (uint8_t byte : bytes) EXPECT_EQ(byte, 0xff);
  const uint8_t out[2] = {1, 2};
  absl::StatusOr<DeviceAction> action = unclaimed.Write(0x80, out);
  ASSERT_TRUE(action.ok());
  EXPECT_EQ(*action, DeviceAction::kContinue);
}

}  // namespace
}  // namespace sigvisor
