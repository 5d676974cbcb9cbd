// The guest protocol's decoding of every argument block, through the hypercall
// table: what the guest controls is bounded, checked and copied.
#include "vmm/run/guest_protocol.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor {
namespace {

class GuestProtocolTest : public ::testing::Test {
 protected:
  GuestProtocolTest()
      : memory_(*GuestMemory::Create(0x10000)),
        protocol_(memory_, [this](std::string_view text) { console_ += text; }) {
    EXPECT_TRUE(protocol_.Register(table_).ok());
  }

  HypercallResult Call(uint64_t nr, uint32_t args_gpa) {
    uint8_t bytes[4];
    std::memcpy(bytes, &args_gpa, 4);
    return table_.Call(nr, bytes);
  }

  GuestMemory memory_;
  std::string console_;
  GuestProtocol protocol_;
  HypercallTable table_;
};

TEST_F(GuestProtocolTest, ConsoleWrite) {
  ASSERT_TRUE(memory_.Write(0x2000, {reinterpret_cast<const uint8_t*>("hello"), 5}).ok());
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0x2000, 5}).ok());
  HypercallResult result = Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000);
  EXPECT_EQ(result.verdict, RunVerdict::kContinue);
  EXPECT_FALSE(result.instrument);
  EXPECT_EQ(console_, "hello");
}

TEST_F(GuestProtocolTest, ConsoleWriteOutsideRamIsRefused) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0xfff0, 0x100}).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).verdict, RunVerdict::kRunFailed);
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{~0ull, 2}).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).verdict, RunVerdict::kRunFailed);
  HypercallResult block = Call(SIGVISOR_HC_CONSOLE_WRITE, 0xfffffff0);  // the block itself
  EXPECT_EQ(block.verdict, RunVerdict::kRunFailed);
  EXPECT_EQ(block.outcome, Outcome::kBadDeviceAccess);
  EXPECT_NE(block.diagnosis.find("hypercall console_write: bad argument block at 0xfffffff0"),
            std::string::npos)
      << block.diagnosis;
  EXPECT_EQ(console_, "");
}

TEST_F(GuestProtocolTest, ConsoleWriteIsCapped) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0x2000, 1ull << 40}).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).verdict, RunVerdict::kContinue);
  EXPECT_EQ(console_.size(), SIGVISOR_CONSOLE_MAX_WRITE);
}

TEST_F(GuestProtocolTest, PhaseMarkersWithUnterminatedName) {
  sigvisor_hc_phase_begin begin = {};
  std::memset(begin.name, 'x', sizeof(begin.name));  // no NUL: all 32 bytes are the name
  begin.ops = 7;
  begin.tsc = 11;
  begin.op_syscall_plus1 = 63;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  HypercallResult began = Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000);
  ASSERT_TRUE(began.marker.has_value());
  EXPECT_TRUE(began.marker->begin);
  EXPECT_EQ(began.marker->name, std::string(32, 'x'));
  EXPECT_EQ(began.marker->ops, 7u);
  EXPECT_EQ(began.marker->op_syscall, 62u);
  EXPECT_FALSE(began.marker->calibration);
  EXPECT_EQ(began.guest_tsc, 11u);
  ASSERT_TRUE(memory_.WriteObject(0x1100, sigvisor_hc_phase_end{19}).ok());
  HypercallResult ended = Call(SIGVISOR_HC_PHASE_END, 0x1100);
  ASSERT_TRUE(ended.marker.has_value());
  EXPECT_FALSE(ended.marker->begin);
  EXPECT_EQ(ended.guest_tsc, 19u);
}

TEST_F(GuestProtocolTest, CalibrationFlagAndUnknownFlags) {
  sigvisor_hc_phase_begin begin = {};
  begin.flags = SIGVISOR_PHASE_CALIBRATION;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  HypercallResult calibration = Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000);
  ASSERT_TRUE(calibration.marker.has_value());
  EXPECT_TRUE(calibration.marker->calibration);
  EXPECT_FALSE(calibration.marker->op_syscall.has_value());
  begin.flags = 0x80;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000).verdict, RunVerdict::kRunFailed);
}

TEST_F(GuestProtocolTest, ExitAndPanicEndTheRun) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_exit{0x103}).ok());
  HypercallResult exited = Call(SIGVISOR_HC_EXIT, 0x1000);
  EXPECT_EQ(exited.verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(exited.outcome, Outcome::kExited);
  EXPECT_EQ(exited.exit_code, 3);  // the low byte, as a process's status
  ASSERT_TRUE(memory_.Write(0x2000, {reinterpret_cast<const uint8_t*>("oops"), 4}).ok());
  sigvisor_hc_panic panic = {};
  panic.message_gpa = 0x2000;
  panic.message_len = 4;
  panic.rip = 0x100123;
  panic.vector = 14;
  ASSERT_TRUE(memory_.WriteObject(0x1000, panic).ok());
  HypercallResult panicked = Call(SIGVISOR_HC_PANIC, 0x1000);
  EXPECT_EQ(panicked.verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(panicked.outcome, Outcome::kPanicked);
  EXPECT_EQ(panicked.diagnosis, "guest kernel panic: oops (vector 14)");
  EXPECT_EQ(panicked.guest_pc, 0x100123u);
}

TEST_F(GuestProtocolTest, TimeReportIsAWarning) {
  sigvisor_hc_time_report report = {};
  std::strcpy(report.name, "lat");
  report.tsc_cycles = 500;
  report.count = 5;
  ASSERT_TRUE(memory_.WriteObject(0x1000, report).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_TIME_REPORT, 0x1000).warning,
            "guest time report 'lat': 500 cycles over 5");
}

TEST_F(GuestProtocolTest, UnknownCallAndBadWidth) {
  EXPECT_EQ(Call(SIGVISOR_HC_COUNT, 0x1000).verdict, RunVerdict::kRunFailed);
  uint8_t one = 0;
  EXPECT_EQ(table_.Call(SIGVISOR_HC_EXIT, {&one, 1}).verdict, RunVerdict::kRunFailed);
}

TEST(HypercallTableTest, OneOwnerPerNumberAndTheEventLeftToItsOwner) {
  HypercallTable table;
  bool injector_called = false;
  ASSERT_TRUE(table
                  .Register(SIGVISOR_HC_EVENT,
                            [&](uint32_t) {
                              injector_called = true;
                              HypercallResult mine;
                              mine.instrument = true;
                              return mine;
                            })
                  .ok());
  GuestMemory memory = *GuestMemory::Create(0x10000);
  GuestProtocol protocol(memory, [](std::string_view) {});
  ASSERT_TRUE(protocol.Register(table).ok());  // takes its own numbers, not the event
  uint32_t gpa = 0x1000;
  uint8_t bytes[4];
  std::memcpy(bytes, &gpa, 4);
  EXPECT_TRUE(table.Call(SIGVISOR_HC_EVENT, bytes).instrument);
  EXPECT_TRUE(injector_called);
  EXPECT_EQ(table.Register(SIGVISOR_HC_EXIT, [](uint32_t) { return HypercallResult{}; }).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(table.Register(HypercallTable::kMaxCalls, nullptr).ok());
}

}  // namespace
}  // namespace sigvisor
