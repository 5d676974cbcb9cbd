#include "devices/pc/cmos_rtc.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;

// An RTC on a settable clock: Tuesday 1 December 2026, 20:28:28 UTC to start with.
class CmosRtcTest : public ::testing::Test {
 protected:
  uint8_t In(uint8_t index) {
    Select(index);
    uint8_t data[1] = {0xee};
    EXPECT_TRUE(rtc_.Read(1, data).ok());
    return data[0];
  }
  void Out(uint8_t index, uint8_t value) {
    Select(index);
    const uint8_t data[1] = {value};
    ASSERT_TRUE(rtc_.Write(1, data).ok());
  }
  void Select(uint8_t index) {
    const uint8_t data[1] = {index};
    ASSERT_TRUE(rtc_.Write(0, data).ok());
  }

  absl::Time now_ = absl::FromCivil(absl::CivilSecond(2026, 12, 1, 20, 28, 28), absl::UTCTimeZone());
  CmosRtc rtc_{256 * kMiB, 0, [this] { return now_; }};
};

TEST_F(CmosRtcTest, ClockReadsInBcdAnd24HourMode) {
  EXPECT_EQ(In(CmosRtc::kSeconds), 0x28);
  EXPECT_EQ(In(CmosRtc::kMinutes), 0x28);
  EXPECT_EQ(In(CmosRtc::kHours), 0x20);
  EXPECT_EQ(In(CmosRtc::kDayOfWeek), 0x03);  // Tuesday: Sunday is 1
  EXPECT_EQ(In(CmosRtc::kDayOfMonth), 0x01);
  EXPECT_EQ(In(CmosRtc::kMonth), 0x12);
  EXPECT_EQ(In(CmosRtc::kYear), 0x26);
  EXPECT_EQ(In(CmosRtc::kCentury), 0x20);

  now_ += absl::Seconds(3);  // read at every access, not latched
  EXPECT_EQ(In(CmosRtc::kSeconds), 0x31);
}

TEST_F(CmosRtcTest, StatusRegisters) {
  EXPECT_EQ(In(CmosRtc::kStatusA), 0x26);  // UIP clear
  EXPECT_EQ(In(CmosRtc::kStatusB), 0x02);  // 24-hour, BCD
  EXPECT_EQ(In(CmosRtc::kStatusC), 0x00);
  EXPECT_EQ(In(CmosRtc::kStatusD), 0x80);  // valid RAM

  Out(CmosRtc::kStatusA, 0xa6);  // UIP is read-only
  EXPECT_EQ(In(CmosRtc::kStatusA), 0x26);
  Out(CmosRtc::kStatusC, 0xff);
  Out(CmosRtc::kStatusD, 0x00);
  EXPECT_EQ(In(CmosRtc::kStatusC), 0x00);
  EXPECT_EQ(In(CmosRtc::kStatusD), 0x80);
}

TEST_F(CmosRtcTest, BinaryAnd12HourModesWhenStatusBAsksForThem) {
  Out(CmosRtc::kStatusB, CmosRtc::kStatusBBinary | CmosRtc::kStatusB24Hour);
  EXPECT_EQ(In(CmosRtc::kMinutes), 28);
  EXPECT_EQ(In(CmosRtc::kHours), 20);
  EXPECT_EQ(In(CmosRtc::kYear), 26);
  EXPECT_EQ(In(CmosRtc::kCentury), 20);

  Out(CmosRtc::kStatusB, 0);  // BCD, 12-hour: 8 PM
  EXPECT_EQ(In(CmosRtc::kHours), 0x88);
  now_ = absl::FromCivil(absl::CivilSecond(2026, 12, 1, 0, 5, 0), absl::UTCTimeZone());
  EXPECT_EQ(In(CmosRtc::kHours), 0x12);  // midnight is 12 AM
  now_ = absl::FromCivil(absl::CivilSecond(2026, 12, 1, 12, 5, 0), absl::UTCTimeZone());
  EXPECT_EQ(In(CmosRtc::kHours), 0x92);  // noon is 12 PM
}

TEST_F(CmosRtcTest, TheNmiBitOfTheIndexIsIgnoredAndTheIndexReadsAllOnes) {
  Select(0x80 | CmosRtc::kStatusD);
  EXPECT_EQ(rtc_.index(), CmosRtc::kStatusD);
  uint8_t data[1] = {};
  ASSERT_TRUE(rtc_.Read(1, data).ok());
  EXPECT_EQ(data[0], 0x80);
  ASSERT_TRUE(rtc_.Read(0, data).ok());
  EXPECT_EQ(data[0], 0xff);
  EXPECT_EQ(rtc_.AccessName(0), "cmos index");
  EXPECT_EQ(rtc_.AccessName(1), "cmos data");
}

TEST_F(CmosRtcTest, MemorySizesAsQemuStoresThem) {
  // 256 MiB: 640 KiB base, 65535 KiB extended (capped), (256 - 16) MiB / 64 KiB = 3840.
  EXPECT_EQ(In(0x15) | In(0x16) << 8, 640);
  EXPECT_EQ(In(0x17) | In(0x18) << 8, 65535);
  EXPECT_EQ(In(0x30) | In(0x31) << 8, 65535);
  EXPECT_EQ(In(0x34) | In(0x35) << 8, 3840);
  EXPECT_EQ(In(0x5b) | In(0x5c) << 8 | In(0x5d) << 16, 0);

  CmosRtc small(32 * kMiB, 0, [] { return absl::UnixEpoch(); });
  CmosRtc large(3 * kGiB, 2 * kGiB, [] { return absl::UnixEpoch(); });
  auto read = [](CmosRtc& rtc, uint8_t index) {
    const uint8_t select[1] = {index};
    EXPECT_TRUE(rtc.Write(0, select).ok());
    uint8_t data[1] = {};
    EXPECT_TRUE(rtc.Read(1, data).ok());
    return int{data[0]};
  };
  EXPECT_EQ(read(small, 0x17) | read(small, 0x18) << 8, 31 * 1024);
  EXPECT_EQ(read(small, 0x34) | read(small, 0x35) << 8, 256);  // 16 MiB / 64 KiB
  EXPECT_EQ(read(large, 0x34) | read(large, 0x35) << 8, (3072 - 16) * 16);  // 64 KiB units
  EXPECT_EQ(read(large, 0x5b) | read(large, 0x5c) << 8 | read(large, 0x5d) << 16, 32768);
}

TEST_F(CmosRtcTest, TheRestIsPlainRam) {
  for (uint8_t index : {0x01, 0x0e, 0x3f, 0x7f}) {
    Out(index, static_cast<uint8_t>(index ^ 0x5a));
    EXPECT_EQ(In(index), index ^ 0x5a);
  }
  Out(0x34, 0x12);  // the memory bytes are RAM too
  EXPECT_EQ(In(0x34), 0x12);
}

// A snapshot's RTC (docs/snapshots.md): the RAM, the selected index and the guest's
// clock as an offset from the time source come back in another RTC.
TEST_F(CmosRtcTest, SavedStateRestoresIntoAnotherRtc) {
  Out(0x3f, 0xa5);
  Out(CmosRtc::kMinutes, 0x45);  // the guest's clock: 17 minutes ahead of the source
  Select(0x3f);
  const CmosRtc::State state = rtc_.SaveState();
  CmosRtc other(256 * kMiB, 0, [this] { return now_; });
  other.RestoreState(state);
  EXPECT_EQ(other.index(), 0x3f);
  uint8_t data[1] = {0};
  ASSERT_TRUE(other.Read(1, data).ok());
  EXPECT_EQ(data[0], 0xa5);
  const uint8_t minutes[1] = {CmosRtc::kMinutes};
  ASSERT_TRUE(other.Write(0, minutes).ok());
  ASSERT_TRUE(other.Read(1, data).ok());
  EXPECT_EQ(data[0], 0x45);
}

TEST_F(CmosRtcTest, SettingTheClockKeepsItsOffsetFromTheTimeSource) {
  Out(CmosRtc::kMinutes, 0x45);
  EXPECT_EQ(In(CmosRtc::kMinutes), 0x45);
  now_ += absl::Minutes(1);
  EXPECT_EQ(In(CmosRtc::kMinutes), 0x46);
  EXPECT_EQ(In(CmosRtc::kHours), 0x20);
}

TEST_F(CmosRtcTest, WhileSetIsOnTheFieldsAreHeldAndTakeEffectTogether) {
  // hwclock's order: SET, then each field; 31 March is written while the month is
  // still December, then February... then March.
  Out(CmosRtc::kStatusB, CmosRtc::kStatusBSet | CmosRtc::kStatusB24Hour);
  Out(CmosRtc::kDayOfMonth, 0x31);
  Out(CmosRtc::kMonth, 0x02);
  EXPECT_EQ(In(CmosRtc::kDayOfMonth), 0x31);  // held as written
  Out(CmosRtc::kMonth, 0x03);
  Out(CmosRtc::kYear, 0x30);
  Out(CmosRtc::kCentury, 0x20);
  Out(CmosRtc::kHours, 0x07);
  Out(CmosRtc::kMinutes, 0x00);
  Out(CmosRtc::kSeconds, 0x00);
  now_ += absl::Seconds(10);  // frozen while held
  EXPECT_EQ(In(CmosRtc::kSeconds), 0x00);
  Out(CmosRtc::kStatusB, CmosRtc::kStatusB24Hour);
  now_ += absl::Seconds(5);
  EXPECT_EQ(In(CmosRtc::kSeconds), 0x05);
  EXPECT_EQ(In(CmosRtc::kDayOfMonth), 0x31);
  EXPECT_EQ(In(CmosRtc::kMonth), 0x03);
  EXPECT_EQ(In(CmosRtc::kYear), 0x30);
  EXPECT_EQ(In(CmosRtc::kDayOfWeek), 0x01);  // 31 March 2030 is a Sunday
}

TEST_F(CmosRtcTest, WideAccessSelectsAndWrites) {
  const uint8_t index_and_value[2] = {0x40, 0x99};  // outw 0x70
  ASSERT_TRUE(rtc_.Write(0, index_and_value).ok());
  EXPECT_EQ(In(0x40), 0x99);
  uint8_t three[3] = {};
  EXPECT_EQ(rtc_.Read(0, three).status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace sigvisor
