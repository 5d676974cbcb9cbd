#include "devices/pc/debug_exit.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

absl::StatusOr<DeviceAction> WriteBytes(DebugExit& device, uint64_t offset,
                                        std::vector<uint8_t> bytes) {
  return device.Write(offset, bytes);
}

TEST(DebugExitTest, NoStatusUntilWritten) {
  DebugExit device;
  EXPECT_EQ(device.exit_status(), std::nullopt);
  EXPECT_EQ(device.name(), "debug-exit");
}

TEST(DebugExitTest, ByteWriteStopsWithQemuStatus) {
  DebugExit device;
  absl::StatusOr<DeviceAction> action = WriteBytes(device, 0, {0x00});
  ASSERT_TRUE(action.ok()) << action.status();
  EXPECT_EQ(*action, DeviceAction::kStop);
  EXPECT_EQ(device.exit_status(), 1);  // (0 << 1) | 1

  ASSERT_TRUE(WriteBytes(device, 0, {0x10}).ok());
  EXPECT_EQ(device.exit_status(), 0x21);  // the common "success" convention: 33
}

TEST(DebugExitTest, WideWritesAreLittleEndian) {
  DebugExit device;
  ASSERT_TRUE(WriteBytes(device, 0, {0x34, 0x12}).ok());
  EXPECT_EQ(device.exit_status(), (0x1234 << 1) | 1);

  ASSERT_TRUE(WriteBytes(device, 0, {0x78, 0x56, 0x34, 0x12}).ok());
  EXPECT_EQ(device.exit_status(), (0x12345678 << 1) | 1);
}

TEST(DebugExitTest, LowEightBitsMatchQemuForLargeValues) {
  DebugExit device;
  ASSERT_TRUE(WriteBytes(device, 0, {0xff, 0xff, 0xff, 0xff}).ok());
  ASSERT_TRUE(device.exit_status().has_value());
  EXPECT_EQ(*device.exit_status() & 0xff, 0xff);
}

TEST(DebugExitTest, AnyOffsetWithinThePortsCounts) {
  DebugExit device;
  ASSERT_TRUE(WriteBytes(device, 3, {0x02}).ok());
  EXPECT_EQ(device.exit_status(), 5);
}

TEST(DebugExitTest, OddSizedWriteIsRefused) {
  DebugExit device;
  EXPECT_EQ(WriteBytes(device, 0, {1, 2, 3}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device.exit_status(), std::nullopt);
}

TEST(DebugExitTest, ReadsReturnZeroAndContinue) {
  DebugExit device;
  uint8_t data[4] = {0xaa, 0xbb, 0xcc, 0xdd};
  absl::StatusOr<DeviceAction> action = device.Read(0, data);
  ASSERT_TRUE(action.ok());
  EXPECT_EQ(*action, DeviceAction::kContinue);
  for (uint8_t byte : data) EXPECT_EQ(byte, 0);
  EXPECT_EQ(device.exit_status(), std::nullopt);
}

}  // namespace
}  // namespace sigvisor
