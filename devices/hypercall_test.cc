#include "devices/hypercall.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

struct RecordingHandler : HypercallHandler {
  std::string console;
  std::vector<std::string> events;
  void OnConsoleWrite(std::string_view text) override { console += text; }
  void OnExit(int64_t status) override { events.push_back("exit " + std::to_string(status)); }
  void OnPhaseBegin(std::string name, uint64_t ops, uint64_t tsc, bool calibration,
                    std::optional<uint64_t>) override {
    events.push_back("begin " + name + " " + std::to_string(ops) + " " + std::to_string(tsc) +
                     (calibration ? " calibration" : ""));
  }
  void OnPhaseEnd(uint64_t tsc) override { events.push_back("end " + std::to_string(tsc)); }
  void OnTimeReport(std::string name, uint64_t cycles, uint64_t count) override {
    events.push_back("time " + name);
  }
  void OnPanic(std::string message, uint64_t rip, uint64_t vector) override {
    events.push_back("panic " + message);
  }
};

class HypercallTest : public ::testing::Test {
 protected:
  HypercallTest() : memory_(*GuestMemory::Create(0x10000)), device_(memory_, handler_) {}

  absl::StatusOr<DeviceAction> Call(uint64_t nr, uint32_t args_gpa) {
    uint8_t bytes[4];
    std::memcpy(bytes, &args_gpa, 4);
    return device_.Write(nr, bytes);
  }

  GuestMemory memory_;
  RecordingHandler handler_;
  HypercallDevice device_;
};

TEST_F(HypercallTest, ConsoleWrite) {
  ASSERT_TRUE(memory_.Write(0x2000, {reinterpret_cast<const uint8_t*>("hello"), 5}).ok());
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0x2000, 5}).ok());
  auto action = Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000);
  ASSERT_TRUE(action.ok());
  EXPECT_EQ(*action, DeviceAction::kContinue);
  EXPECT_EQ(handler_.console, "hello");
}

TEST_F(HypercallTest, ConsoleWriteOutsideRamIsRefused) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0xfff0, 0x100}).ok());
  EXPECT_FALSE(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).ok());
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{~0ull, 2}).ok());
  EXPECT_FALSE(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).ok());
  EXPECT_FALSE(Call(SIGVISOR_HC_CONSOLE_WRITE, 0xfffffff0).ok());  // the block itself
  EXPECT_EQ(handler_.console, "");
}

TEST_F(HypercallTest, ConsoleWriteIsCapped) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0x2000, 1ull << 40}).ok());
  ASSERT_TRUE(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).ok());
  EXPECT_EQ(handler_.console.size(), SIGVISOR_CONSOLE_MAX_WRITE);
}

TEST_F(HypercallTest, PhaseMarkersWithUnterminatedName) {
  sigvisor_hc_phase_begin begin = {};
  std::memset(begin.name, 'x', sizeof(begin.name));  // no NUL: all 32 bytes are the name
  begin.ops = 7;
  begin.tsc = 11;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  ASSERT_TRUE(Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000).ok());
  ASSERT_TRUE(memory_.WriteObject(0x1100, sigvisor_hc_phase_end{19}).ok());
  ASSERT_TRUE(Call(SIGVISOR_HC_PHASE_END, 0x1100).ok());
  ASSERT_EQ(handler_.events.size(), 2u);
  EXPECT_EQ(handler_.events[0], "begin " + std::string(32, 'x') + " 7 11");
  EXPECT_EQ(handler_.events[1], "end 19");
}

TEST_F(HypercallTest, CalibrationFlagAndUnknownFlags) {
  sigvisor_hc_phase_begin begin = {};
  begin.flags = SIGVISOR_PHASE_CALIBRATION;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  ASSERT_TRUE(Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000).ok());
  EXPECT_EQ(handler_.events.back(), "begin  0 0 calibration");
  begin.flags = 0x80;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  EXPECT_FALSE(Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000).ok());
}

TEST_F(HypercallTest, ExitAndPanicStop) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_exit{3}).ok());
  EXPECT_EQ(*Call(SIGVISOR_HC_EXIT, 0x1000), DeviceAction::kStop);
  EXPECT_EQ(handler_.events.back(), "exit 3");
}

TEST_F(HypercallTest, UnknownCallAndBadWidth) {
  EXPECT_FALSE(Call(SIGVISOR_HC_COUNT, 0x1000).ok());
  uint8_t one = 0;
  EXPECT_FALSE(device_.Write(SIGVISOR_HC_EXIT, {&one, 1}).ok());
}

}  // namespace
}  // namespace sigvisor
