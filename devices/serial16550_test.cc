#include "devices/serial16550.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

constexpr uint64_t kThr = 0, kDll = 0, kDlm = 1, kIer = 1, kIir = 2, kFcr = 2, kLcr = 3,
                   kMcr = 4, kLsr = 5, kMsr = 6, kScr = 7;
constexpr uint8_t kDlab = 0x80;

// A UART whose output lands in `output`, with byte-wide helpers like the guest's
// inb/outb.
class SerialTest : public ::testing::Test {
 protected:
  void Out(uint64_t offset, uint8_t value) {
    const uint8_t data[] = {value};
    absl::StatusOr<DeviceAction> action = serial_.Write(offset, data);
    ASSERT_TRUE(action.ok()) << action.status();
    EXPECT_EQ(*action, DeviceAction::kContinue);
  }
  uint8_t In(uint64_t offset) {
    uint8_t data[] = {0xee};
    absl::StatusOr<DeviceAction> action = serial_.Read(offset, data);
    EXPECT_TRUE(action.ok()) << action.status();
    return data[0];
  }
  void Print(std::string_view text) {
    for (char c : text) Out(kThr, static_cast<uint8_t>(c));
  }

  std::string output_;
  Serial16550 serial_{[this](std::string_view bytes) { output_.append(bytes); }};
};

TEST_F(SerialTest, TransmitsEachByteToTheSinkAndCountsIt) {
  Print("hi\n");
  EXPECT_EQ(output_, "hi\n");
  EXPECT_EQ(serial_.bytes_out(), 3u);

  // Every byte value passes through unchanged, including NUL and 0xff.
  Out(kThr, 0x00);
  Out(kThr, 0xff);
  EXPECT_EQ(output_, std::string("hi\n\0\xff", 5));
  EXPECT_EQ(serial_.bytes_out(), 5u);
}

TEST_F(SerialTest, SinkSeesEachByteAsSoonAsItIsWritten) {
  Out(kThr, 'a');
  EXPECT_EQ(output_, "a");  // no line buffering in the device
}

TEST_F(SerialTest, DivisorLatchIsHonouredAndReadsBack) {
  // The usual init sequence: DLAB on, divisor 3 (38400 baud), 8N1 with DLAB off.
  Out(kLcr, kDlab);
  Out(kDll, 0x03);
  Out(kDlm, 0x01);
  EXPECT_EQ(In(kDll), 0x03);
  EXPECT_EQ(In(kDlm), 0x01);
  EXPECT_EQ(serial_.divisor(), 0x0103);
  EXPECT_EQ(In(kLcr), kDlab);
  // Bytes written while DLAB is set program the divisor; they are not output.
  EXPECT_EQ(output_, "");
  EXPECT_EQ(serial_.bytes_out(), 0u);

  Out(kLcr, 0x03);
  EXPECT_EQ(In(kLcr), 0x03);
  Print("ok");
  EXPECT_EQ(output_, "ok");
  EXPECT_EQ(serial_.divisor(), 0x0103);  // THR writes leave the divisor alone
  // With DLAB clear, offset 1 is IER again, distinct from DLM.
  Out(kIer, 0x01);
  EXPECT_EQ(In(kIer), 0x01);
  Out(kLcr, kDlab | 0x03);
  EXPECT_EQ(In(kDlm), 0x01);
}

TEST_F(SerialTest, LineStatusAlwaysReportsTransmitterIdleAndNoData) {
  EXPECT_EQ(In(kLsr), 0x60);
  Print("x");
  EXPECT_EQ(In(kLsr), 0x60);
  Out(kLsr, 0x00);  // read-only
  EXPECT_EQ(In(kLsr), 0x60);
}

TEST_F(SerialTest, NoInterruptPendingUntilEnabledAndNothingReceived) {
  EXPECT_EQ(In(kIir), 0x01);
  Print("x");  // sending makes THRE pending, but IER enables nothing
  EXPECT_EQ(In(kIir), 0x01);
  Out(kIer, 0x0d);  // everything but THRE
  EXPECT_EQ(In(kIir), 0x01);
  Out(kFcr, 0xc7);
  EXPECT_EQ(In(kIir), 0xc1);  // FIFOs enabled, nothing pending
  EXPECT_EQ(In(kThr), 0x00);  // RBR
  EXPECT_FALSE(serial_.irq_level());
}

TEST_F(SerialTest, ScratchAndControlRegistersReadBack) {
  Out(kScr, 0x5a);
  EXPECT_EQ(In(kScr), 0x5a);
  Out(kScr, 0xa5);
  EXPECT_EQ(In(kScr), 0xa5);
  Out(kMcr, 0x0b);
  EXPECT_EQ(In(kMcr), 0x0b);
  Out(kIer, 0xff);
  EXPECT_EQ(In(kIer), 0x0f);  // only four interrupt-enable bits exist
  EXPECT_EQ(In(kMsr), 0xb0);  // DCD, DSR, CTS: ready to send
  EXPECT_EQ(output_, "");
}

TEST_F(SerialTest, LoopbackProbeIsAnsweredAndNotOutput) {
  // OSDev-style init: loopback, send 0xae, expect it back, then normal operation.
  Out(kMcr, 0x1e);
  Out(kThr, 0xae);
  EXPECT_EQ(In(kLsr), 0x61);  // data ready
  EXPECT_EQ(In(kThr), 0xae);
  EXPECT_EQ(In(kLsr), 0x60);
  EXPECT_EQ(In(kThr), 0x00);
  EXPECT_EQ(In(kMsr), 0xd0);  // RTS->CTS, OUT1->RI, OUT2->DCD
  EXPECT_EQ(serial_.bytes_out(), 0u);

  Out(kMcr, 0x0f);
  Print("up");
  EXPECT_EQ(output_, "up");
}

TEST_F(SerialTest, WideAccessesAreConsecutiveByteAccesses) {
  const uint8_t lcr_and_mcr[] = {0x03, 0x0b};
  ASSERT_TRUE(serial_.Write(kLcr, lcr_and_mcr).ok());
  EXPECT_EQ(In(kLcr), 0x03);
  EXPECT_EQ(In(kMcr), 0x0b);

  uint8_t status[2] = {};
  ASSERT_TRUE(serial_.Read(kLsr, status).ok());
  EXPECT_EQ(status[0], 0x60);
  EXPECT_EQ(status[1], 0xb0);

  uint8_t too_far[2] = {};
  EXPECT_EQ(serial_.Read(kScr, too_far).status().code(), absl::StatusCode::kOutOfRange);
}

// The UART with its interrupt line recorded, as a 16550 driver drives it.
class SerialIrqTest : public SerialTest {
 protected:
  SerialIrqTest() {
    serial_.set_irq_line([this](bool level) { levels_.push_back(level); });
  }
  std::vector<bool> levels_;
};

TEST_F(SerialIrqTest, EnablingThreInterruptsRaisesTheLineAtOnce) {
  Out(kIer, 0x02);
  EXPECT_EQ(levels_, (std::vector<bool>{true}));
  EXPECT_TRUE(serial_.irq_level());
  EXPECT_EQ(In(kIir), 0x02);  // THRE, and reading it acknowledges it
  EXPECT_EQ(levels_, (std::vector<bool>{true, false}));
  EXPECT_EQ(In(kIir), 0x01);
  Out(kIer, 0x00);
  EXPECT_EQ(levels_.size(), 2u);  // no change, no call
}

TEST_F(SerialIrqTest, EachByteSentIsAFreshEdgeAndDisablingDropsTheLine) {
  Out(kIer, 0x02);
  Print("ab");
  // IER: up. Each THR write: down (acknowledged), the byte leaves, up again.
  EXPECT_EQ(levels_, (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(output_, "ab");
  Out(kIer, 0x00);  // the driver's stop_tx
  EXPECT_EQ(levels_.back(), false);
  EXPECT_EQ(In(kIir), 0x01);
}

TEST_F(SerialIrqTest, ReceivedDataOutranksThreAndClearsWhenRead) {
  Out(kMcr, 0x10);  // loopback
  Out(kIer, 0x03);
  Out(kThr, 0x5a);
  EXPECT_EQ(In(kIir), 0x04);  // data available: reading IIR does not acknowledge it
  EXPECT_EQ(In(kIir), 0x04);
  EXPECT_EQ(In(kThr), 0x5a);
  EXPECT_EQ(In(kIir), 0x02);  // then THRE
  EXPECT_EQ(In(kIir), 0x01);
  EXPECT_FALSE(serial_.irq_level());
  EXPECT_EQ(serial_.bytes_out(), 0u);
}

TEST_F(SerialIrqTest, LinuxStartupProbeSeesThreAtOnce) {
  // serial8250_do_startup's UART_BUG_THRE and TXEN tests: enable THRI, read IIR;
  // a UART that says "no interrupt" there is taken for a buggy one.
  Out(kLcr, 0x03);
  Out(kFcr, 0x07);
  Out(kIer, 0x02);
  EXPECT_EQ(In(kIir) & 0x0f, 0x02);
  Out(kIer, 0x00);
  Out(kIer, 0x02);
  EXPECT_EQ(In(kLsr) & 0x40, 0x40);  // TEMT
  EXPECT_EQ(In(kIir), 0xc2);
  Out(kIer, 0x00);
  EXPECT_FALSE(serial_.irq_level());
}

TEST(SerialLateLineTest, ALineConnectedLaterIsSetIfAnInterruptIsPending) {
  Serial16550 serial(nullptr);
  const uint8_t thri[] = {0x02};
  ASSERT_TRUE(serial.Write(1, thri).ok());
  EXPECT_TRUE(serial.irq_level());
  std::vector<bool> levels;
  serial.set_irq_line([&](bool level) { levels.push_back(level); });
  EXPECT_EQ(levels, (std::vector<bool>{true}));
}

TEST(SerialWithoutSinkTest, DiscardsButCounts) {
  Serial16550 serial(nullptr);
  const uint8_t byte[] = {'z'};
  ASSERT_TRUE(serial.Write(0, byte).ok());
  EXPECT_EQ(serial.bytes_out(), 1u);
  EXPECT_EQ(serial.name(), "serial");
}

// A snapshot's serial: a second UART given the first's state reads back every register
// the same and keeps the looped-back byte and the pending interrupt.
TEST_F(SerialTest, RestoredStateReadsBackTheSame) {
  Out(kLcr, kDlab);
  Out(kDll, 0x01);
  Out(kDlm, 0x00);
  Out(kLcr, 0x03);
  Out(kFcr, 0x01);
  Out(kMcr, 0x10);  // loopback
  Out(kScr, 0x5a);
  Out(kThr, 'q');   // waits in the receiver, looped back
  Out(kIer, 0x03);

  std::vector<bool> levels;
  Serial16550 restored(nullptr, [&](bool level) { levels.push_back(level); });
  restored.RestoreState(serial_.SaveState());
  EXPECT_EQ(levels, (std::vector<bool>{serial_.irq_level()}));
  EXPECT_EQ(restored.divisor(), 1);
  for (uint64_t reg : {kIer, kLcr, kMcr, kLsr, kScr, kIir, kThr, kLsr}) {
    uint8_t theirs[] = {0}, ours[] = {0};
    ASSERT_TRUE(serial_.Read(reg, theirs).ok());
    ASSERT_TRUE(restored.Read(reg, ours).ok());
    EXPECT_EQ(ours[0], theirs[0]) << "register " << reg;
  }
}

}  // namespace
}  // namespace sigvisor
