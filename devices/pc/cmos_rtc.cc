#include "devices/pc/cmos_rtc.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

constexpr uint8_t kIndexMask = 0x7f;  // bit 7 of an index write masks NMIs: ignored
constexpr uint8_t kStatusAUpdateInProgress = 0x80;
constexpr uint8_t kStatusAReset = 0x26;  // 32.768 kHz time base, 1024 Hz rate (QEMU's)
constexpr uint8_t kStatusDValidRam = 0x80;
constexpr uint8_t kHourPm = 0x80;  // 12-hour mode

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

void StoreLittleEndian(std::array<uint8_t, 128>& ram, uint8_t index, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) ram[index + i] = static_cast<uint8_t>(value >> (8 * i));
}

// The RTC's day of week: 1-7 from Sunday.
int RtcWeekday(absl::CivilDay day) {
  switch (absl::GetWeekday(day)) {
    case absl::Weekday::sunday: return 1;
    case absl::Weekday::monday: return 2;
    case absl::Weekday::tuesday: return 3;
    case absl::Weekday::wednesday: return 4;
    case absl::Weekday::thursday: return 5;
    case absl::Weekday::friday: return 6;
    case absl::Weekday::saturday: return 7;
  }
  return 1;
}

}  // namespace

CmosRtc::CmosRtc(uint64_t ram_below_4g, uint64_t ram_above_4g, TimeSource now)
    : now_(std::move(now)) {
  ram_[kStatusA] = kStatusAReset;
  ram_[kStatusB] = kStatusB24Hour;
  // The memory sizes, as QEMU's pc_cmos_init stores them for the firmware.
  StoreLittleEndian(ram_, 0x15, std::min<uint64_t>(ram_below_4g / kKiB, 640), 2);
  const uint64_t extended =
      std::min<uint64_t>(ram_below_4g > kMiB ? (ram_below_4g - kMiB) / kKiB : 0, 65535);
  StoreLittleEndian(ram_, 0x17, extended, 2);
  StoreLittleEndian(ram_, 0x30, extended, 2);
  const uint64_t above_16m = std::min<uint64_t>(
      ram_below_4g > 16 * kMiB ? (ram_below_4g - 16 * kMiB) / (64 * kKiB) : 0, 65535);
  StoreLittleEndian(ram_, 0x34, above_16m, 2);
  StoreLittleEndian(ram_, 0x5b, ram_above_4g / (64 * kKiB), 3);
}

std::string CmosRtc::AccessName(uint64_t offset) const {
  return offset == 0 ? "cmos index" : "cmos data";
}

absl::StatusOr<DeviceAction> CmosRtc::Read(uint64_t offset, std::span<uint8_t> data) {
  if (offset >= kPortCount || data.size() > kPortCount - offset) {
    return absl::OutOfRangeError(
        absl::StrFormat("cmos access at offset %d (%d bytes) is outside its 2 ports", offset,
                        data.size()));
  }
  for (size_t i = 0; i < data.size(); ++i) {
    // The index register is write-only; QEMU reads it as 0xff.
    data[i] = offset + i == 0 ? 0xff : ReadRegister(index_);
  }
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> CmosRtc::Write(uint64_t offset, std::span<const uint8_t> data) {
  if (offset >= kPortCount || data.size() > kPortCount - offset) {
    return absl::OutOfRangeError(
        absl::StrFormat("cmos access at offset %d (%d bytes) is outside its 2 ports", offset,
                        data.size()));
  }
  for (size_t i = 0; i < data.size(); ++i) {
    if (offset + i == 0) {
      index_ = data[i] & kIndexMask;
    } else {
      WriteRegister(index_, data[i]);
    }
  }
  return DeviceAction::kContinue;
}

CmosRtc::Fields CmosRtc::Current() const {
  if (held_) return *held_;
  const absl::CivilSecond t = absl::ToCivilSecond(now_() + offset_, absl::UTCTimeZone());
  return Fields{t.year(), t.month(), t.day(), t.hour(), t.minute(), t.second()};
}

void CmosRtc::SetClock(const Fields& f) {
  // CivilSecond normalizes what does not exist (February 30th is March 2nd), as the
  // clock chip would roll over.
  const absl::CivilSecond t(f.year, f.month, f.day, f.hour, f.minute, f.second);
  offset_ = absl::FromCivil(t, absl::UTCTimeZone()) - now_();
}

uint8_t CmosRtc::Encode(int value) const {
  if (ram_[kStatusB] & kStatusBBinary) return static_cast<uint8_t>(value);
  return static_cast<uint8_t>(((value / 10) << 4) | (value % 10));
}

int CmosRtc::Decode(uint8_t value) const {
  if (ram_[kStatusB] & kStatusBBinary) return value;
  return (value >> 4) * 10 + (value & 0x0f);
}

uint8_t CmosRtc::EncodeHour(int hour) const {
  if (ram_[kStatusB] & kStatusB24Hour) return Encode(hour);
  const int twelve = hour % 12 == 0 ? 12 : hour % 12;
  return Encode(twelve) | (hour >= 12 ? kHourPm : 0);
}

int CmosRtc::DecodeHour(uint8_t value) const {
  if (ram_[kStatusB] & kStatusB24Hour) return Decode(value);
  return Decode(value & ~kHourPm) % 12 + ((value & kHourPm) ? 12 : 0);
}

uint8_t CmosRtc::ReadRegister(uint8_t index) {
  switch (index) {
    case kSeconds: return Encode(Current().second);
    case kMinutes: return Encode(Current().minute);
    case kHours: return EncodeHour(Current().hour);
    case kDayOfWeek: {
      const Fields f = Current();
      return Encode(RtcWeekday(absl::CivilDay(f.year, f.month, f.day)));
    }
    case kDayOfMonth: return Encode(Current().day);
    case kMonth: return Encode(Current().month);
    case kYear: return Encode(static_cast<int>(Current().year % 100));
    case kCentury: return Encode(static_cast<int>(Current().year / 100));
    case kStatusA: return ram_[kStatusA] & ~kStatusAUpdateInProgress;
    case kStatusC: return 0;  // no interrupt flags: the RTC raises none
    case kStatusD: return kStatusDValidRam;
    default: return ram_[index];
  }
}

void CmosRtc::WriteRegister(uint8_t index, uint8_t value) {
  auto set_field = [&](auto apply) {
    Fields f = Current();
    apply(f);
    if (held_) {
      held_ = f;
    } else {
      SetClock(f);
    }
  };
  switch (index) {
    case kSeconds: return set_field([&](Fields& f) { f.second = Decode(value); });
    case kMinutes: return set_field([&](Fields& f) { f.minute = Decode(value); });
    case kHours: return set_field([&](Fields& f) { f.hour = DecodeHour(value); });
    case kDayOfWeek: return;  // follows from the date
    case kDayOfMonth: return set_field([&](Fields& f) { f.day = Decode(value); });
    case kMonth: return set_field([&](Fields& f) { f.month = Decode(value); });
    case kYear:
      return set_field([&](Fields& f) { f.year = f.year / 100 * 100 + Decode(value); });
    case kCentury:
      return set_field([&](Fields& f) { f.year = Decode(value) * 100 + f.year % 100; });
    case kStatusA:
      ram_[kStatusA] = value & ~kStatusAUpdateInProgress;
      return;
    case kStatusB: {
      const bool was_set = ram_[kStatusB] & kStatusBSet;
      const bool set = value & kStatusBSet;
      if (set && !was_set) held_ = Current();  // latched before the mode changes
      ram_[kStatusB] = value;
      if (!set && was_set) {
        const Fields f = *held_;
        held_.reset();
        SetClock(f);
      }
      return;
    }
    case kStatusC:
    case kStatusD: return;  // read-only
    default: ram_[index] = value;
  }
}

CmosRtc::State CmosRtc::SaveState() const {
  State state = {};
  state.index = index_;
  state.offset_ns = absl::ToInt64Nanoseconds(offset_);
  if (held_) {
    state.held = 1;
    state.held_year = held_->year;
    state.held_month = held_->month;
    state.held_day = held_->day;
    state.held_hour = held_->hour;
    state.held_minute = held_->minute;
    state.held_second = held_->second;
  }
  state.ram = ram_;
  return state;
}

void CmosRtc::RestoreState(const State& state) {
  index_ = state.index;
  offset_ = absl::Nanoseconds(state.offset_ns);
  held_.reset();
  if (state.held) {
    held_ = Fields{state.held_year, state.held_month,  state.held_day,
                   state.held_hour, state.held_minute, state.held_second};
  }
  ram_ = state.ram;
}

}  // namespace sigvisor
