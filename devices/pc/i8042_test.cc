#include "devices/pc/i8042.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

// A controller whose interrupt lines record each level they are set to.
class I8042Test : public ::testing::Test {
 protected:
  DeviceAction Command(uint8_t command) { return Write(controller_.command_port(), command); }
  DeviceAction Data(uint8_t value) { return Write(controller_.data_port(), value); }
  uint8_t Status() { return Read(controller_.command_port()); }
  uint8_t ReadData() { return Read(controller_.data_port()); }

  static DeviceAction Write(Device& port, uint8_t value) {
    const uint8_t data[1] = {value};
    absl::StatusOr<DeviceAction> action = port.Write(0, data);
    EXPECT_TRUE(action.ok()) << action.status();
    return action.value_or(DeviceAction::kContinue);
  }
  static uint8_t Read(Device& port) {
    uint8_t data[1] = {0xee};
    EXPECT_TRUE(port.Read(0, data).ok());
    return data[0];
  }

  std::vector<bool> keyboard_levels_;
  std::vector<bool> aux_levels_;
  I8042 controller_{[this](bool level) { keyboard_levels_.push_back(level); },
                    [this](bool level) { aux_levels_.push_back(level); }};
};

// A snapshot's i8042 (docs/snapshots.md): its command byte and queued output come back
// in another controller, which then reads as this one would.
TEST_F(I8042Test, SavedStateRestoresIntoAnotherController) {
  Command(0x60);  // write the command byte
  Data(I8042::kCtrSystem | I8042::kCtrTranslate);
  Command(0x20);  // read it back: one byte queued
  absl::StatusOr<I8042::State> state = controller_.SaveState();
  ASSERT_TRUE(state.ok()) << state.status();
  I8042 other;
  other.RestoreState(*state);
  EXPECT_EQ(other.command_byte(), I8042::kCtrSystem | I8042::kCtrTranslate);
  EXPECT_EQ(other.status(), Status());
  EXPECT_EQ(Read(other.data_port()), I8042::kCtrSystem | I8042::kCtrTranslate);
}

TEST_F(I8042Test, IdleStatusAndNames) {
  EXPECT_EQ(Status(), I8042::kStatusUnlocked | I8042::kStatusSystem | I8042::kStatusCommand);
  EXPECT_EQ(controller_.data_port().name(), "i8042");
  EXPECT_EQ(controller_.data_port().AccessName(0), "i8042 data");
  EXPECT_EQ(controller_.command_port().AccessName(0), "i8042 status/command");
}

TEST_F(I8042Test, SelfTestAndInterfaceTestsAnswer) {
  EXPECT_EQ(Command(0xaa), DeviceAction::kContinue);
  EXPECT_TRUE(Status() & I8042::kStatusOutputFull);
  EXPECT_EQ(ReadData(), 0x55);
  EXPECT_FALSE(Status() & I8042::kStatusOutputFull);
  Command(0xab);
  EXPECT_EQ(ReadData(), 0x00);
  Command(0xa9);
  EXPECT_EQ(ReadData(), 0x00);
  EXPECT_EQ(ReadData(), 0x00);  // an empty buffer reads the last byte again
}

TEST_F(I8042Test, CommandByteReadsAndWritesAndThePortBitsFollowTheirCommands) {
  Command(0x20);
  EXPECT_EQ(ReadData(), 0x65);  // as firmware leaves it
  Command(0x60);
  EXPECT_EQ(Status() & I8042::kStatusCommand, I8042::kStatusCommand);
  Data(0x47);
  EXPECT_EQ(Status() & I8042::kStatusCommand, 0);  // the last write was data
  Command(0x20);
  EXPECT_EQ(ReadData(), 0x47);
  EXPECT_EQ(controller_.command_byte(), 0x47);

  Command(0xa7);
  EXPECT_TRUE(controller_.command_byte() & I8042::kCtrAuxDisabled);
  Command(0xa8);
  EXPECT_FALSE(controller_.command_byte() & I8042::kCtrAuxDisabled);
  Command(0xad);
  EXPECT_TRUE(controller_.command_byte() & I8042::kCtrKeyboardDisabled);
  Command(0xae);
  EXPECT_FALSE(controller_.command_byte() & I8042::kCtrKeyboardDisabled);

  Command(0x60);
  Data(0x00);  // the system flag follows the command byte's
  EXPECT_FALSE(Status() & I8042::kStatusSystem);
  Command(0xaa);
  EXPECT_TRUE(Status() & I8042::kStatusSystem);
}

TEST_F(I8042Test, ResetLinePulsesEndTheRun) {
  EXPECT_EQ(Command(0xfe), DeviceAction::kReset);
  EXPECT_EQ(Command(0xf0), DeviceAction::kReset);  // every even pulse command holds bit 0
  EXPECT_EQ(Command(0xff), DeviceAction::kContinue);
  EXPECT_EQ(Command(0xd0), DeviceAction::kContinue);
  EXPECT_EQ(ReadData(), 0x03);
  Command(0xd1);
  EXPECT_EQ(Data(0xdf), DeviceAction::kContinue);  // A20 on, reset line high
  Command(0xd1);
  EXPECT_EQ(Data(0xde), DeviceAction::kReset);
}

TEST_F(I8042Test, LoopbackCommandsReturnTheByteAsThatPortsData) {
  Command(0xd3);
  Data(0x5a);
  EXPECT_EQ(Status() & (I8042::kStatusOutputFull | I8042::kStatusAuxData),
            I8042::kStatusOutputFull | I8042::kStatusAuxData);
  EXPECT_EQ(ReadData(), 0x5a);
  Command(0xd2);
  Data(0xa5);
  EXPECT_EQ(Status() & (I8042::kStatusOutputFull | I8042::kStatusAuxData),
            I8042::kStatusOutputFull);
  EXPECT_EQ(ReadData(), 0xa5);
}

TEST_F(I8042Test, BytesForAbsentDevicesTimeOutAtOnce) {
  Data(0xf2);  // keyboard: identify
  EXPECT_EQ(Status() & (I8042::kStatusOutputFull | I8042::kStatusTimeout | I8042::kStatusAuxData),
            I8042::kStatusOutputFull | I8042::kStatusTimeout);
  EXPECT_EQ(ReadData(), 0xfe);
  EXPECT_FALSE(Status() & I8042::kStatusTimeout);

  Command(0xd4);
  Data(0xf2);  // mouse: identify
  EXPECT_EQ(Status() & (I8042::kStatusOutputFull | I8042::kStatusTimeout | I8042::kStatusAuxData),
            I8042::kStatusOutputFull | I8042::kStatusTimeout | I8042::kStatusAuxData);
  EXPECT_EQ(ReadData(), 0xfe);
}

TEST_F(I8042Test, InterruptLinesFollowTheHeadOfTheBufferAndTheCommandByte) {
  // Keyboard interrupts are on as firmware leaves them; AUX ones off.
  Command(0xaa);
  EXPECT_EQ(keyboard_levels_, (std::vector<bool>{true}));
  ReadData();
  EXPECT_EQ(keyboard_levels_, (std::vector<bool>{true, false}));

  Command(0xd3);
  Data(0x5a);
  EXPECT_TRUE(aux_levels_.empty());  // AUX interrupt disabled
  ReadData();

  Command(0x60);
  Data(I8042::kCtrAuxInterrupt | I8042::kCtrKeyboardInterrupt);
  Command(0xd3);
  Data(0x5a);
  Command(0xab);  // queued behind the AUX byte
  EXPECT_EQ(aux_levels_, (std::vector<bool>{true}));
  EXPECT_EQ(ReadData(), 0x5a);
  EXPECT_EQ(aux_levels_, (std::vector<bool>{true, false}));
  EXPECT_EQ(keyboard_levels_, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(ReadData(), 0x00);
  EXPECT_EQ(keyboard_levels_, (std::vector<bool>{true, false, true, false}));

  // A disabled keyboard port raises nothing.
  Command(0xad);
  Data(0xf2);
  EXPECT_EQ(keyboard_levels_.size(), 4u);
  Command(0xae);
  EXPECT_EQ(keyboard_levels_.back(), true);
}

TEST(I8042WithoutLinesTest, WorksPolled) {
  I8042 controller;
  const uint8_t self_test[1] = {0xaa};
  ASSERT_TRUE(controller.command_port().Write(0, self_test).ok());
  uint8_t data[1] = {};
  ASSERT_TRUE(controller.data_port().Read(0, data).ok());
  EXPECT_EQ(data[0], 0x55);
}

}  // namespace
}  // namespace sigvisor
