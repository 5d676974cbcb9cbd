// The PC's CMOS and real-time clock (an MC146818 at ports 0x70/0x71), as QEMU's
// mc146818rtc and pc_cmos_init give it to a guest: write a register's index to 0x70
// (bit 7, the NMI mask, is ignored), then read or write it at 0x71.
//
// The clock registers (seconds, minutes, hours, day of week and of month, month,
// year, and the century at 0x32) come from a time source the machine passes in, in
// BCD and 24-hour mode (status B = 0x02, QEMU's reset value) unless the guest
// switches status B to binary or 12-hour. Status A never shows an update in progress
// (UIP = 0), C never has an interrupt flag, D says the RAM is valid. A guest that sets
// the clock (hwclock) moves it: the device keeps the offset from its time source, and
// while status B's SET bit is on, the written fields are held and take effect
// together when it goes off. There are no RTC interrupts (IRQ 8).
//
// The rest of the 128 bytes is plain CMOS RAM, with the memory sizes QEMU stores for
// the firmware: base memory (0x15/0x16, KiB up to 640), extended memory above 1 MiB
// (0x17/0x18 and 0x30/0x31, KiB, at most 65535), memory from 16 MiB to 4 GiB (0x34/
// 0x35, 64 KiB units, at most 65535) and above 4 GiB (0x5b-0x5d, 64 KiB units).
#ifndef SIGVISOR_DEVICES_PC_CMOS_RTC_H_
#define SIGVISOR_DEVICES_PC_CMOS_RTC_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "vmm/machine/device.h"

namespace sigvisor {

class CmosRtc : public Device {
 public:
  static constexpr uint64_t kPortBase = 0x70;
  static constexpr uint64_t kPortCount = 2;  // index (0x70), data (0x71)

  // Register indices.
  static constexpr uint8_t kSeconds = 0x00;
  static constexpr uint8_t kMinutes = 0x02;
  static constexpr uint8_t kHours = 0x04;
  static constexpr uint8_t kDayOfWeek = 0x06;  // 1-7, Sunday = 1
  static constexpr uint8_t kDayOfMonth = 0x07;
  static constexpr uint8_t kMonth = 0x08;
  static constexpr uint8_t kYear = 0x09;  // two digits
  static constexpr uint8_t kStatusA = 0x0a;
  static constexpr uint8_t kStatusB = 0x0b;
  static constexpr uint8_t kStatusC = 0x0c;
  static constexpr uint8_t kStatusD = 0x0d;
  static constexpr uint8_t kCentury = 0x32;

  // Status B bits.
  static constexpr uint8_t kStatusBSet = 0x80;     // the guest is setting the clock
  static constexpr uint8_t kStatusBBinary = 0x04;  // DM: binary rather than BCD
  static constexpr uint8_t kStatusB24Hour = 0x02;

  // The wall-clock time the RTC shows (before the guest moves it); the machine passes
  // absl::Now, tests a fixed time.
  using TimeSource = std::function<absl::Time()>;

  CmosRtc(uint64_t ram_below_4g, uint64_t ram_above_4g, TimeSource now);

  std::string_view name() const override { return "cmos"; }
  std::string AccessName(uint64_t offset) const override;

  // A multi-byte access is consecutive byte accesses (an `outw` to 0x70 selects an
  // index and writes it), as an ISA bus splits one for an 8-bit device.
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

  uint8_t index() const { return index_; }

  // What a snapshot keeps (docs/snapshots.md): the selected index, the RAM (status
  // registers included), the guest's clock as an offset from the time source, and a
  // clock held while the guest sets it.
  struct State {
    uint8_t index;
    uint8_t held;  // 1: the fields below are the held clock
    uint8_t reserved[6];
    int64_t offset_ns;
    int64_t held_year;
    int32_t held_month, held_day, held_hour, held_minute, held_second;
    int32_t reserved2;
    std::array<uint8_t, 128> ram;
  };
  State SaveState() const;
  void RestoreState(const State& state);

 private:
  // A date and time as the registers hold it, each field on its own: while SET is on,
  // a guest may write day 31 before it writes the month that has one.
  struct Fields {
    int64_t year;
    int month, day, hour, minute, second;
  };

  uint8_t ReadRegister(uint8_t index);
  void WriteRegister(uint8_t index, uint8_t value);
  Fields Current() const;
  void SetClock(const Fields& fields);
  uint8_t Encode(int value) const;
  int Decode(uint8_t value) const;
  uint8_t EncodeHour(int hour) const;
  int DecodeHour(uint8_t value) const;

  TimeSource now_;
  absl::Duration offset_;  // the guest's clock minus the time source
  std::optional<Fields> held_;  // while status B's SET bit is on
  uint8_t index_ = 0;
  std::array<uint8_t, 128> ram_{};  // also holds status A and B
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_PC_CMOS_RTC_H_
