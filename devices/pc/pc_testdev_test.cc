#include "devices/pc/pc_testdev.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "vmm/machine/bus.h"

namespace sigvisor {
namespace {

// The device on a bus at QEMU's addresses, its IRQ writes recorded.
class PcTestdevTest : public ::testing::Test {
 protected:
  PcTestdevTest() {
    EXPECT_TRUE(bus_.Register(AddressSpace::kPort, PcTestdev::kPortBase, PcTestdev::kPortCount,
                              &testdev_.ports())
                    .ok());
    EXPECT_TRUE(bus_.Register(AddressSpace::kPort, PcTestdev::kIrqPortBase, PcTestdev::kIrqLines,
                              &testdev_.irq_ports())
                    .ok());
    EXPECT_TRUE(bus_.Register(AddressSpace::kMmio, PcTestdev::kMemoryBase,
                              PcTestdev::kMemorySize, &testdev_.memory())
                    .ok());
  }
  absl::Status Out(AddressSpace space, uint64_t addr, std::vector<uint8_t> bytes) {
    return bus_.Write(space, addr, bytes).status();
  }
  std::vector<uint8_t> In(AddressSpace space, uint64_t addr, size_t size) {
    std::vector<uint8_t> bytes(size, 0xee);
    EXPECT_TRUE(bus_.Read(space, addr, bytes).ok());
    return bytes;
  }

  std::vector<std::pair<int, bool>> lines_;
  PcTestdev testdev_{[this](int line, bool level) { lines_.emplace_back(line, level); }};
  Bus bus_;
};

using Bytes = std::vector<uint8_t>;

TEST_F(PcTestdevTest, LatchEchoesWhatWasWrittenAtItsWidthAndOffset) {
  ASSERT_TRUE(Out(AddressSpace::kPort, 0xe0, {0x78, 0x56, 0x34, 0x12}).ok());
  EXPECT_EQ(testdev_.latch(), 0x12345678u);
  EXPECT_EQ(In(AddressSpace::kPort, 0xe0, 4), (Bytes{0x78, 0x56, 0x34, 0x12}));
  EXPECT_EQ(In(AddressSpace::kPort, 0xe0, 1), (Bytes{0x78}));
  EXPECT_EQ(In(AddressSpace::kPort, 0xe2, 2), (Bytes{0x34, 0x12}));

  ASSERT_TRUE(Out(AddressSpace::kPort, 0xe1, {0xaa, 0xbb}).ok());  // only bytes 1 and 2
  EXPECT_EQ(testdev_.latch(), 0x12bbaa78u);
  ASSERT_TRUE(Out(AddressSpace::kPort, 0xe3, {0xcc}).ok());
  EXPECT_EQ(testdev_.latch(), 0xccbbaa78u);

  // The byte-wise block at 0xe8 is the same latch.
  EXPECT_EQ(In(AddressSpace::kPort, 0xe8, 4), (Bytes{0x78, 0xaa, 0xbb, 0xcc}));
  ASSERT_TRUE(Out(AddressSpace::kPort, 0xe8, {1, 2, 3, 4}).ok());
  EXPECT_EQ(testdev_.latch(), 0x04030201u);
}

TEST_F(PcTestdevTest, FlushIsANoOp) {
  ASSERT_TRUE(Out(AddressSpace::kPort, 0xe0, {1, 2, 3, 4}).ok());
  ASSERT_TRUE(Out(AddressSpace::kPort, 0xe4, {0x00, 0x10, 0x00, 0x00}).ok());
  EXPECT_EQ(testdev_.latch(), 0x04030201u);
  EXPECT_EQ(In(AddressSpace::kPort, 0xe4, 4), (Bytes{0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(testdev_.ports().AccessName(4), "pc-testdev flush page");
  EXPECT_EQ(testdev_.ports().AccessName(0), "pc-testdev latch");
  EXPECT_EQ(testdev_.ports().AccessName(8), "pc-testdev byte latch");
}

TEST_F(PcTestdevTest, IrqPortsSetTheirLineOnEveryWrite) {
  ASSERT_TRUE(Out(AddressSpace::kPort, 0x200e, {1}).ok());
  ASSERT_TRUE(Out(AddressSpace::kPort, 0x200e, {1}).ok());  // passed on again
  ASSERT_TRUE(Out(AddressSpace::kPort, 0x200e, {0}).ok());
  ASSERT_TRUE(Out(AddressSpace::kPort, 0x2017, {0x80}).ok());
  ASSERT_TRUE(Out(AddressSpace::kPort, 0x2000, {1}).ok());
  EXPECT_EQ(lines_, (std::vector<std::pair<int, bool>>{
                        {14, true}, {14, true}, {14, false}, {23, true}, {0, true}}));
  EXPECT_EQ(In(AddressSpace::kPort, 0x2001, 1), (Bytes{0xff}));

  EXPECT_EQ(Out(AddressSpace::kPort, 0x2002, {1, 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(lines_.size(), 5u);
  // Line 24 is past the device: nothing there.
  EXPECT_EQ(Out(AddressSpace::kPort, 0x2018, {1}).code(), absl::StatusCode::kNotFound);
}

TEST_F(PcTestdevTest, MemoryIsPlainAtAnyWidth) {
  EXPECT_EQ(In(AddressSpace::kMmio, 0xff000000, 8), Bytes(8, 0));
  ASSERT_TRUE(Out(AddressSpace::kMmio, 0xff000100, {1, 2, 3, 4, 5, 6, 7, 8}).ok());
  ASSERT_TRUE(Out(AddressSpace::kMmio, 0xff000102, {0xaa, 0xbb}).ok());
  EXPECT_EQ(In(AddressSpace::kMmio, 0xff000100, 8), (Bytes{1, 2, 0xaa, 0xbb, 5, 6, 7, 8}));
  EXPECT_EQ(In(AddressSpace::kMmio, 0xff000103, 1), (Bytes{0xbb}));
  ASSERT_TRUE(Out(AddressSpace::kMmio, 0xff00fffc, {9, 9, 9, 9}).ok());  // the last word
  EXPECT_EQ(In(AddressSpace::kMmio, 0xff00fffc, 4), (Bytes{9, 9, 9, 9}));
  uint8_t past[8] = {};
  EXPECT_FALSE(bus_.Read(AddressSpace::kMmio, 0xff00fffc, past).ok());
  EXPECT_EQ(testdev_.memory().AccessName(0x100), "pc-testdev memory");
}

TEST(PcTestdevWithoutLinesTest, IrqWritesAreDropped) {
  PcTestdev testdev(nullptr);
  const uint8_t one[1] = {1};
  EXPECT_TRUE(testdev.irq_ports().Write(3, one).ok());
}

}  // namespace
}  // namespace sigvisor
