// The instruction behind a port I/O exit is found whether KVM left rip on it or past
// it, and only an instruction that makes the exit's access counts.
#include "arch/x86_64/vmm/machine/port_io_site.h"

#include <map>

#include "gtest/gtest.h"

namespace sigvisor::x86 {
namespace {

using PortIo = CpuLocation::PortIo;

TEST(PortIoSiteTest, MatchesDirectionSizeAndPort) {
  const PortIo outb_dx{.port = 0x1234, .size = 1, .out = true, .port_in_register = true};
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xee, 0xf4}, outb_dx), 1u);  // outb %al, %dx
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xec}, outb_dx), std::nullopt);  // inb
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xef}, outb_dx), std::nullopt);  // outl
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xee}, PortIo{.port = 0x1234, .size = 1, .out = true,
                                                           .port_in_register = false}),
            std::nullopt);  // DX names another port
  const PortIo outl_imm{.port = 0xf4, .size = 4, .out = true};
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xe7, 0xf4}, outl_imm), 2u);  // out %eax, $0xf4
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xe7, 0xf5}, outl_imm), std::nullopt);
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xe7}, outl_imm), std::nullopt);  // imm8 cut off
  const PortIo outw_imm{.port = 0x70, .size = 2, .out = true};
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0x66, 0xe7, 0x70}, outw_imm), 3u);
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xe7, 0x70}, outw_imm), std::nullopt);
  const PortIo rep_insw{.port = 0x1f0, .size = 2, .out = false, .port_in_register = true};
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0x66, 0xf3, 0x6d}, rep_insw), 3u);
  EXPECT_EQ(MatchPortIo(std::vector<uint8_t>{0xf4}, rep_insw), std::nullopt);  // hlt
}

// no_device's `outb %al, %dx; hlt` at 0x100006: rip on the out (hardware KVM) or on
// the hlt after it (PVM, which emulated the out), the out is found.
TEST(PortIoSiteTest, FindsTheInstructionOnOrBeforeRip) {
  const std::map<uint64_t, uint8_t> memory = {{0x100000, 0x66}, {0x100001, 0xba},
                                              {0x100002, 0x34}, {0x100003, 0x12},
                                              {0x100004, 0xb0}, {0x100005, 0x5a},
                                              {0x100006, 0xee}, {0x100007, 0xf4}};
  auto read = [&](uint64_t address, size_t n) {
    std::vector<uint8_t> bytes;
    for (uint64_t a = address; a < address + n; ++a) {
      auto it = memory.find(a);
      if (it == memory.end()) break;
      bytes.push_back(it->second);
    }
    return bytes;
  };
  const PortIo io{.port = 0x1234, .size = 1, .out = true, .port_in_register = true};
  EXPECT_EQ(PortIoInstructionAddress(0x100006, io, read), 0x100006u);
  EXPECT_EQ(PortIoInstructionAddress(0x100007, io, read), 0x100006u);
  // Another access matches neither place: rip is left as it is.
  const PortIo other{.port = 0xf4, .size = 4, .out = true};
  EXPECT_EQ(PortIoInstructionAddress(0x100007, other, read), 0x100007u);
  // At the start of readable memory nothing before rip can be read.
  EXPECT_EQ(PortIoInstructionAddress(0x100000, io, read), 0x100000u);
}

TEST(PortIoSiteTest, TwoLikeInstructionsInARowTakeTheOneAtRip) {
  const PortIo io{.port = 0xf4, .size = 4, .out = true};
  const std::vector<uint8_t> two = {0xe7, 0xf4};
  EXPECT_EQ(PortIoInstructionBack(two, two, io), 0u);
  EXPECT_EQ(PortIoInstructionBack(two, std::vector<uint8_t>{0x90}, io), 2u);
  EXPECT_EQ(PortIoInstructionBack({}, std::vector<uint8_t>{0x90}, io), std::nullopt);
}

}  // namespace
}  // namespace sigvisor::x86
