#include "devices/serial16550.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

// Register offsets. Offsets 0 and 1 are the divisor latch while LCR.DLAB is set.
constexpr uint64_t kData = 0;             // RBR (read) / THR (write); DLL with DLAB
constexpr uint64_t kInterruptEnable = 1;  // IER; DLM with DLAB
constexpr uint64_t kInterruptId = 2;      // IIR (read) / FCR (write)
constexpr uint64_t kLineControl = 3;      // LCR
constexpr uint64_t kModemControl = 4;     // MCR
constexpr uint64_t kLineStatus = 5;       // LSR
constexpr uint64_t kModemStatus = 6;      // MSR
constexpr uint64_t kScratch = 7;          // SCR

constexpr uint8_t kLcrDivisorLatch = 0x80;  // DLAB
constexpr uint8_t kMcrLoopback = 0x10;

constexpr uint8_t kIerReceivedData = 0x01;
constexpr uint8_t kIerTransmitterEmpty = 0x02;

constexpr uint8_t kIirNoInterruptPending = 0x01;
constexpr uint8_t kIirTransmitterEmpty = 0x02;
constexpr uint8_t kIirReceivedData = 0x04;
constexpr uint8_t kIirFifosEnabled = 0xc0;
constexpr uint8_t kFcrEnableFifos = 0x01;
constexpr uint8_t kLsrDataReady = 0x01;
// THR empty and transmitter empty: a polling guest may always send.
constexpr uint8_t kLsrTransmitterIdle = 0x20 | 0x40;
// DCD, DSR and CTS: a modem is attached and ready, so guests that honour flow control
// still send.
constexpr uint8_t kMsrModemReady = 0x80 | 0x20 | 0x10;

// Only the low bits of these registers exist on a 16550; the rest read as 0.
constexpr uint8_t kIerMask = 0x0f;
constexpr uint8_t kMcrMask = 0x1f;

absl::Status CheckInRange(uint64_t offset, size_t size) {
  if (offset >= Serial16550::kPortCount || size > Serial16550::kPortCount - offset) {
    return absl::OutOfRangeError(absl::StrFormat(
        "serial access at offset %d (%d bytes) is outside its %d ports", offset, size,
        Serial16550::kPortCount));
  }
  return absl::OkStatus();
}

}  // namespace

Serial16550::Serial16550(OutputSink sink, IrqLine irq)
    : sink_(std::move(sink)), irq_(std::move(irq)) {}

void Serial16550::set_irq_line(IrqLine irq) {
  irq_ = std::move(irq);
  if (irq_level_ && irq_) irq_(true);
}

uint8_t Serial16550::PendingInterrupt() const {
  // Highest priority first; line-status and modem-status interrupts never arise
  // here (no receive errors, no modem-line changes).
  if ((interrupt_enable_ & kIerReceivedData) && looped_back_.has_value()) return kIirReceivedData;
  if ((interrupt_enable_ & kIerTransmitterEmpty) && thr_interrupt_pending_) {
    return kIirTransmitterEmpty;
  }
  return kIirNoInterruptPending;
}

void Serial16550::UpdateIrq() {
  const bool level = PendingInterrupt() != kIirNoInterruptPending;
  if (level == irq_level_) return;
  irq_level_ = level;
  if (irq_) irq_(level);
}

absl::StatusOr<DeviceAction> Serial16550::Read(uint64_t offset, std::span<uint8_t> data) {
  if (absl::Status status = CheckInRange(offset, data.size()); !status.ok()) return status;
  for (size_t i = 0; i < data.size(); ++i) data[i] = ReadRegister(offset + i);
  return DeviceAction::kContinue;
}

absl::StatusOr<DeviceAction> Serial16550::Write(uint64_t offset,
                                                std::span<const uint8_t> data) {
  if (absl::Status status = CheckInRange(offset, data.size()); !status.ok()) return status;
  for (size_t i = 0; i < data.size(); ++i) WriteRegister(offset + i, data[i]);
  return DeviceAction::kContinue;
}

bool Serial16550::divisor_latch_selected() const {
  return (line_control_ & kLcrDivisorLatch) != 0;
}

bool Serial16550::loopback() const { return (modem_control_ & kMcrLoopback) != 0; }

uint8_t Serial16550::ReadRegister(uint64_t offset) {
  switch (offset) {
    case kData:
      if (divisor_latch_selected()) return divisor_ & 0xff;
      // Nothing is ever received, except what the UART sent itself in loopback.
      if (looped_back_.has_value()) {
        const uint8_t byte = *looped_back_;
        looped_back_.reset();
        UpdateIrq();
        return byte;
      }
      return 0;
    case kInterruptEnable:
      return divisor_latch_selected() ? divisor_ >> 8 : interrupt_enable_;
    case kInterruptId: {
      const uint8_t pending = PendingInterrupt();
      // Reading IIR acknowledges a THRE interrupt it names.
      if (pending == kIirTransmitterEmpty) {
        thr_interrupt_pending_ = false;
        UpdateIrq();
      }
      return pending | (fifos_enabled_ ? kIirFifosEnabled : 0);
    }
    case kLineControl:
      return line_control_;
    case kModemControl:
      return modem_control_;
    case kLineStatus:
      return kLsrTransmitterIdle | (looped_back_.has_value() ? kLsrDataReady : 0);
    case kModemStatus:
      if (loopback()) {
        // In loopback the modem outputs are wired back to the inputs:
        // RTS->CTS, DTR->DSR, OUT1->RI, OUT2->DCD.
        const uint8_t mcr = modem_control_;
        return ((mcr & 0x02) ? 0x10 : 0) | ((mcr & 0x01) ? 0x20 : 0) |
               ((mcr & 0x04) ? 0x40 : 0) | ((mcr & 0x08) ? 0x80 : 0);
      }
      return kMsrModemReady;
    case kScratch:
      return scratch_;
  }
  return 0;  // unreachable: callers check the offset
}

void Serial16550::WriteRegister(uint64_t offset, uint8_t value) {
  switch (offset) {
    case kData:
      if (divisor_latch_selected()) {
        divisor_ = static_cast<uint16_t>((divisor_ & 0xff00) | value);
        return;
      }
      // Writing THR acknowledges the THRE interrupt; the byte leaves at once and THR
      // is empty again, so the interrupt is pending anew (the line drops and rises:
      // a fresh edge for an edge-triggered IRQ, as in QEMU).
      thr_interrupt_pending_ = false;
      UpdateIrq();
      if (loopback()) {
        looped_back_ = value;  // sent to itself, not to the line
      } else {
        ++bytes_out_;
        if (sink_) sink_(std::string_view(reinterpret_cast<const char*>(&value), 1));
      }
      thr_interrupt_pending_ = true;
      UpdateIrq();
      return;
    case kInterruptEnable:
      if (divisor_latch_selected()) {
        divisor_ = static_cast<uint16_t>((divisor_ & 0x00ff) | (value << 8));
      } else {
        interrupt_enable_ = value & kIerMask;
        // THR is always empty: any IER write makes the THRE interrupt pending (the
        // probe Linux runs at start-up expects it at once).
        thr_interrupt_pending_ = true;
        UpdateIrq();
      }
      return;
    case kInterruptId:  // FCR: the FIFOs are only reported (nothing is ever queued)
      fifos_enabled_ = (value & kFcrEnableFifos) != 0;
      return;
    case kLineControl:
      line_control_ = value;
      return;
    case kModemControl:
      modem_control_ = value & kMcrMask;
      return;
    case kLineStatus:
    case kModemStatus:
      return;  // read-only on real hardware (writes are a factory test mode)
    case kScratch:
      scratch_ = value;
      return;
  }
}

Serial16550::State Serial16550::SaveState() const {
  return State{.divisor = divisor_,
               .interrupt_enable = interrupt_enable_,
               .line_control = line_control_,
               .modem_control = modem_control_,
               .scratch = scratch_,
               .fifos_enabled = fifos_enabled_,
               .thr_interrupt_pending = thr_interrupt_pending_,
               .has_looped_back = looped_back_.has_value(),
               .looped_back = looped_back_.value_or(0),
               .irq_level = irq_level_,
               .reserved = 0};
}

void Serial16550::RestoreState(const State& state) {
  divisor_ = state.divisor;
  interrupt_enable_ = state.interrupt_enable;
  line_control_ = state.line_control;
  modem_control_ = state.modem_control;
  scratch_ = state.scratch;
  fifos_enabled_ = state.fifos_enabled != 0;
  thr_interrupt_pending_ = state.thr_interrupt_pending != 0;
  looped_back_.reset();
  if (state.has_looped_back != 0) looped_back_ = state.looped_back;
  irq_level_ = state.irq_level != 0;
  if (irq_) irq_(irq_level_);
}

}  // namespace sigvisor
