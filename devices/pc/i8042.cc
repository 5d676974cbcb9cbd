#include "devices/pc/i8042.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

constexpr uint8_t kCmdReadCommandByte = 0x20;
constexpr uint8_t kCmdWriteCommandByte = 0x60;
constexpr uint8_t kCmdDisableAux = 0xa7;
constexpr uint8_t kCmdEnableAux = 0xa8;
constexpr uint8_t kCmdTestAux = 0xa9;
constexpr uint8_t kCmdSelfTest = 0xaa;
constexpr uint8_t kCmdTestKeyboard = 0xab;
constexpr uint8_t kCmdDisableKeyboard = 0xad;
constexpr uint8_t kCmdEnableKeyboard = 0xae;
constexpr uint8_t kCmdReadOutputPort = 0xd0;
constexpr uint8_t kCmdWriteOutputPort = 0xd1;
constexpr uint8_t kCmdWriteKeyboardOutput = 0xd2;
constexpr uint8_t kCmdWriteAuxOutput = 0xd3;
constexpr uint8_t kCmdWriteToAux = 0xd4;
constexpr uint8_t kCmdPulseFirst = 0xf0;  // 0xf0-0xff: pulse output bits 0-3 low

constexpr uint8_t kSelfTestPassed = 0x55;
constexpr uint8_t kInterfaceTestPassed = 0x00;
constexpr uint8_t kNoDevice = 0xfe;  // with the timeout bit: nothing answered
constexpr uint8_t kOutputPortReset = 0x01;  // low: the CPU's reset line is asserted

// The controller's own buffer is one byte; a few more keep a burst of answers a
// guest asks for without reading (it never needs more) from being lost.
constexpr size_t kMaxOutput = 16;

}  // namespace

I8042::I8042(IrqLine keyboard_irq, IrqLine aux_irq)
    : keyboard_irq_(std::move(keyboard_irq)), aux_irq_(std::move(aux_irq)) {}

std::string I8042::AccessName(int range, uint64_t) const {
  return range == kCommand ? "i8042 status/command" : "i8042 data";
}

absl::StatusOr<DeviceAction> I8042::Read(int range, uint64_t, std::span<uint8_t> data) {
  for (uint8_t& byte : data) byte = range == kCommand ? status() : ReadData();
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> I8042::Write(int range, uint64_t, std::span<const uint8_t> data) {
  for (uint8_t byte : data) {
    const DeviceAction action = range == kCommand ? WriteCommand(byte) : WriteData(byte);
    if (action != DeviceAction::kContinue) return action;
  }
  return DeviceAction::kContinue;
}

uint8_t I8042::status() const {
  uint8_t status = kStatusUnlocked;
  if (system_flag_) status |= kStatusSystem;
  if (last_write_was_command_) status |= kStatusCommand;
  if (!output_.empty()) {
    status |= kStatusOutputFull;
    if (output_.front().aux) status |= kStatusAuxData;
    if (output_.front().timeout) status |= kStatusTimeout;
  }
  return status;
}

void I8042::Queue(uint8_t byte, bool aux, bool timeout) {
  if (output_.size() < kMaxOutput) output_.push_back(Output{byte, aux, timeout});
  UpdateIrqs();
}

uint8_t I8042::ReadData() {
  // An empty buffer reads the last byte again, as QEMU's does.
  if (!output_.empty()) {
    last_read_ = output_.front().byte;
    output_.pop_front();
    UpdateIrqs();
  }
  return last_read_;
}

DeviceAction I8042::WriteData(uint8_t value) {
  last_write_was_command_ = false;
  const std::optional<uint8_t> command = std::exchange(pending_, std::nullopt);
  switch (command.value_or(0)) {
    case kCmdWriteCommandByte:
      command_byte_ = value;
      system_flag_ = (value & kCtrSystem) != 0;
      UpdateIrqs();
      return DeviceAction::kContinue;
    case kCmdWriteOutputPort:
      if (!(value & kOutputPortReset)) return DeviceAction::kReset;
      output_port_ = value;
      return DeviceAction::kContinue;
    case kCmdWriteKeyboardOutput:
      Queue(value);
      return DeviceAction::kContinue;
    case kCmdWriteAuxOutput:
      Queue(value, /*aux=*/true);
      return DeviceAction::kContinue;
    case kCmdWriteToAux:
      Queue(kNoDevice, /*aux=*/true, /*timeout=*/true);
      return DeviceAction::kContinue;
    default:  // a byte for the keyboard, which is not there
      Queue(kNoDevice, /*aux=*/false, /*timeout=*/true);
      return DeviceAction::kContinue;
  }
}

DeviceAction I8042::WriteCommand(uint8_t command) {
  last_write_was_command_ = true;
  pending_.reset();
  if (command >= kCmdPulseFirst) {
    // Bits 0-3 say which output-port bits to pulse low; bit 0 is the reset line.
    return (command & kOutputPortReset) ? DeviceAction::kContinue : DeviceAction::kReset;
  }
  switch (command) {
    case kCmdReadCommandByte: Queue(command_byte_); break;
    case kCmdWriteCommandByte:
    case kCmdWriteOutputPort:
    case kCmdWriteKeyboardOutput:
    case kCmdWriteAuxOutput:
    case kCmdWriteToAux: pending_ = command; break;
    case kCmdDisableAux: command_byte_ |= kCtrAuxDisabled; break;
    case kCmdEnableAux: command_byte_ &= ~kCtrAuxDisabled; break;
    case kCmdTestAux: Queue(kInterfaceTestPassed); break;
    case kCmdSelfTest:
      system_flag_ = true;
      Queue(kSelfTestPassed);
      break;
    case kCmdTestKeyboard: Queue(kInterfaceTestPassed); break;
    case kCmdDisableKeyboard: command_byte_ |= kCtrKeyboardDisabled; break;
    case kCmdEnableKeyboard: command_byte_ &= ~kCtrKeyboardDisabled; break;
    case kCmdReadOutputPort: Queue(output_port_); break;
    default: break;  // not implemented: ignored, as an unknown command is
  }
  UpdateIrqs();
  return DeviceAction::kContinue;
}

void I8042::UpdateIrqs() {
  bool keyboard = false;
  bool aux = false;
  if (!output_.empty()) {
    if (output_.front().aux) {
      aux = (command_byte_ & kCtrAuxInterrupt) != 0;
    } else {
      keyboard = (command_byte_ & kCtrKeyboardInterrupt) != 0 &&
                 !(command_byte_ & kCtrKeyboardDisabled);
    }
  }
  if (keyboard != keyboard_level_) {
    keyboard_level_ = keyboard;
    if (keyboard_irq_) keyboard_irq_(keyboard);
  }
  if (aux != aux_level_) {
    aux_level_ = aux;
    if (aux_irq_) aux_irq_(aux);
  }
}

absl::StatusOr<I8042::State> I8042::SaveState() const {
  if (output_.size() > kMaxSavedOutput) {
    return absl::FailedPreconditionError(
        absl::StrFormat("the i8042 holds %d output bytes; a snapshot keeps at most %d",
                        output_.size(), kMaxSavedOutput));
  }
  State state = {};
  state.command_byte = command_byte_;
  state.system_flag = system_flag_;
  state.last_write_was_command = last_write_was_command_;
  state.has_pending = pending_.has_value();
  state.pending = pending_.value_or(0);
  state.output_port = output_port_;
  state.last_read = last_read_;
  state.keyboard_level = keyboard_level_;
  state.aux_level = aux_level_;
  state.output_count = static_cast<uint8_t>(output_.size());
  for (size_t i = 0; i < output_.size(); ++i) {
    state.output_byte[i] = output_[i].byte;
    state.output_flags[i] = (output_[i].aux ? 1 : 0) | (output_[i].timeout ? 2 : 0);
  }
  return state;
}

void I8042::RestoreState(const State& state) {
  command_byte_ = state.command_byte;
  system_flag_ = state.system_flag != 0;
  last_write_was_command_ = state.last_write_was_command != 0;
  pending_.reset();
  if (state.has_pending) pending_ = state.pending;
  output_port_ = state.output_port;
  last_read_ = state.last_read;
  keyboard_level_ = state.keyboard_level != 0;
  aux_level_ = state.aux_level != 0;
  output_.clear();
  for (size_t i = 0; i < std::min<size_t>(state.output_count, kMaxSavedOutput); ++i) {
    output_.push_back(Output{state.output_byte[i], (state.output_flags[i] & 1) != 0,
                             (state.output_flags[i] & 2) != 0});
  }
}

}  // namespace sigvisor
