// The PC's keyboard controller (an i8042 at ports 0x60 and 0x64), as much of it as a
// Linux guest's probe uses, with nothing plugged into either of its PS/2 ports; and
// its reset line, which is how Linux reboots a PC (reboot=k, and its default once
// ACPI has failed): command 0xfe pulses it, and the run ends as a reboot.
//
// Controller commands (written to 0x64; answers appear at 0x60 with status OBF):
//   0x20 read the command byte        0x60 write it (next byte at 0x60)
//   0xa7/0xa8 disable/enable the AUX port, 0xad/0xae the keyboard port (command byte)
//   0xa9 AUX interface test: 0x00     0xaa self-test: 0x55    0xab keyboard test: 0x00
//   0xd0 read the output port         0xd1 write it: bit 0 clear resets the machine
//   0xd2/0xd3 write the keyboard/AUX output buffer (the byte comes back as that port's)
//   0xd4 send the next byte to the AUX device
//   0xf0-0xff pulse output bits: an even command (0xfe) pulses the reset line
// Anything else is ignored. A byte sent to either device (0x60 with no command
// pending, or after 0xd4) meets no device: the controller answers 0xfe with the
// status register's timeout bit, as a real one does with nothing plugged in, so a
// driver's probe fails at once instead of waiting out its own timeout.
//
// Interrupts: optional lines for the keyboard (IRQ 1) and AUX (IRQ 12), driven as
// QEMU's pckbd does: a line is high while the byte at the head of the output buffer
// is that port's and the command byte enables its interrupt (and, for the keyboard,
// does not disable the port). Without lines, Linux still probes the controller
// through polling; its keyboard and AUX probes then give up after their timeouts.
//
// Status register: OBF (0x01), system flag (0x04, set as firmware leaves it),
// command/data (0x08: the last write was to 0x64), keyboard not inhibited (0x10), AUX
// data (0x20), timeout (0x40). IBF (0x02) is never set: input is taken at once.
//
// The two ports are two devices on the bus (0x61-0x63 in between are not the
// controller's): register data_port() at 0x60 and command_port() at 0x64.
#ifndef SIGVISOR_DEVICES_PC_I8042_H_
#define SIGVISOR_DEVICES_PC_I8042_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

class I8042 : public MultiRangeDevice {
 public:
  static constexpr uint64_t kDataPort = 0x60;
  static constexpr uint64_t kCommandPort = 0x64;
  static constexpr uint64_t kPortCount = 1;  // each of the two

  static constexpr int kKeyboardIrq = 1;
  static constexpr int kAuxIrq = 12;

  // Status register bits.
  static constexpr uint8_t kStatusOutputFull = 0x01;
  static constexpr uint8_t kStatusSystem = 0x04;
  static constexpr uint8_t kStatusCommand = 0x08;
  static constexpr uint8_t kStatusUnlocked = 0x10;
  static constexpr uint8_t kStatusAuxData = 0x20;
  static constexpr uint8_t kStatusTimeout = 0x40;

  // Command byte bits.
  static constexpr uint8_t kCtrKeyboardInterrupt = 0x01;
  static constexpr uint8_t kCtrAuxInterrupt = 0x02;
  static constexpr uint8_t kCtrSystem = 0x04;
  static constexpr uint8_t kCtrKeyboardDisabled = 0x10;
  static constexpr uint8_t kCtrAuxDisabled = 0x20;
  static constexpr uint8_t kCtrTranslate = 0x40;

  // Sets an interrupt line to `level`; called only when the level changes.
  using IrqLine = std::function<void(bool level)>;

  // Either line may be empty (not connected).
  explicit I8042(IrqLine keyboard_irq = nullptr, IrqLine aux_irq = nullptr);

  I8042(const I8042&) = delete;
  I8042& operator=(const I8042&) = delete;

  Device& data_port() { return data_port_; }
  Device& command_port() { return command_port_; }

  uint8_t status() const;
  uint8_t command_byte() const { return command_byte_; }

  // What a snapshot keeps (docs/snapshots.md): the controller's registers, a command
  // waiting for its byte, and up to kMaxSavedOutput queued output bytes.
  static constexpr size_t kMaxSavedOutput = 16;
  struct State {
    uint8_t command_byte;
    uint8_t system_flag;
    uint8_t last_write_was_command;
    uint8_t has_pending;
    uint8_t pending;
    uint8_t output_port;
    uint8_t last_read;
    uint8_t keyboard_level;
    uint8_t aux_level;
    uint8_t output_count;
    uint8_t output_byte[kMaxSavedOutput];
    uint8_t output_flags[kMaxSavedOutput];  // bit 0 aux, bit 1 timeout
  };
  // Fails when more output is queued than a State holds.
  absl::StatusOr<State> SaveState() const;
  // The registers and the queue; the interrupt lines are the irqchip's (restored with it).
  void RestoreState(const State& state);

  std::string_view name() const override { return "i8042"; }
  std::string AccessName(int range, uint64_t offset) const override;
  absl::StatusOr<DeviceAction> Read(int range, uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(int range, uint64_t offset,
                                     std::span<const uint8_t> data) override;

 private:
  enum Range { kData, kCommand };

  struct Output {
    uint8_t byte;
    bool aux;
    bool timeout;
  };

  uint8_t ReadData();
  DeviceAction WriteData(uint8_t value);
  DeviceAction WriteCommand(uint8_t command);
  void Queue(uint8_t byte, bool aux = false, bool timeout = false);
  void UpdateIrqs();

  DeviceRange data_port_{*this, kData};
  DeviceRange command_port_{*this, kCommand};
  IrqLine keyboard_irq_;
  IrqLine aux_irq_;
  bool keyboard_level_ = false;
  bool aux_level_ = false;

  // As firmware leaves it: keyboard interrupt on, system flag, AUX off, translation.
  uint8_t command_byte_ = kCtrKeyboardInterrupt | kCtrSystem | kCtrAuxDisabled | kCtrTranslate;
  bool system_flag_ = true;
  bool last_write_was_command_ = true;
  std::optional<uint8_t> pending_;  // a command waiting for its byte at 0x60
  uint8_t output_port_ = 0x03;      // reset line not asserted, A20 enabled
  std::deque<Output> output_;
  uint8_t last_read_ = 0;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_PC_I8042_H_
