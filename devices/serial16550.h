// COM1 as the guests in the Multiboot notes expect it: a 16550 UART at 8 consecutive
// ports whose transmitter is always ready, so a polling guest never waits, and whose
// output goes straight to a sink (the machine streams it to stdout).
//
// There is no receiver: RBR reads 0. Loopback mode (MCR bit 4) is honoured because
// common serial-init code probes it by sending a byte to itself; without it that
// probe byte would leak into the output and the guest would decide its UART is
// faulty.
//
// Interrupts, as QEMU's serial.c raises them: IIR names the highest pending one of
// "received data available" (IER bit 0, while a looped-back byte waits) and
// "transmitter holding register empty" (IER bit 1). The THRE interrupt becomes
// pending whenever IER is written and after each byte is sent (at once: the line is
// never busy), and stops being pending when IIR is read naming it or THR is written.
// With FIFOs enabled (FCR bit 0) IIR's top bits read 0xc0, so Linux's probe finds a
// 16550A and sends 16 bytes per THRE interrupt. The interrupt line (optional: a
// polled UART has none) is high while an enabled interrupt is pending and is set only
// when that changes; MCR's OUT2 does not gate it, as in QEMU. Without a line the
// registers behave the same and nothing else happens: a polling guest sees no
// difference (LSR is unchanged).

#ifndef SIGVISOR_DEVICES_SERIAL16550_H_
#define SIGVISOR_DEVICES_SERIAL16550_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "vmm/machine/device.h"

namespace sigvisor {

class Serial16550 : public Device {
 public:
  // Ports the UART occupies; the machine registers it at 0x3f8 (COM1).
  static constexpr uint64_t kPortCount = 8;

  // Receives each transmitted byte as soon as the guest writes it; buffering is the
  // sink's business. An empty sink discards output (bytes are still counted).
  using OutputSink = std::function<void(std::string_view)>;

  // Sets the UART's interrupt line (COM1: IRQ 4) to `level`.
  using IrqLine = std::function<void(bool level)>;

  explicit Serial16550(OutputSink sink, IrqLine irq = nullptr);

  // Connects the interrupt line after construction (the machine may create the
  // interrupt controller later); it is set at once if an interrupt is pending.
  void set_irq_line(IrqLine irq);

  std::string_view name() const override { return "serial"; }

  // A multi-byte access is taken as consecutive byte accesses, as an ISA bus splits
  // a wide access to an 8-bit device.
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

  // The registers a snapshot keeps (what the guest programmed and what is pending),
  // fixed-width so that it is saved as it is. Not the output count: a restored VM
  // counts its own.
  struct State {
    uint16_t divisor;
    uint8_t interrupt_enable;
    uint8_t line_control;
    uint8_t modem_control;
    uint8_t scratch;
    uint8_t fifos_enabled;
    uint8_t thr_interrupt_pending;
    uint8_t has_looped_back;
    uint8_t looped_back;
    uint8_t irq_level;
    uint8_t reserved;
  };
  State SaveState() const;
  // Puts the registers back, and the interrupt line (if connected) to the saved level.
  void RestoreState(const State& state);

  // Bytes sent to the sink so far.
  uint64_t bytes_out() const { return bytes_out_; }
  // The baud-rate divisor last programmed through the divisor latch.
  uint16_t divisor() const { return divisor_; }
  // The interrupt line's level (whether or not a line is connected).
  bool irq_level() const { return irq_level_; }

 private:
  uint8_t ReadRegister(uint64_t offset);
  void WriteRegister(uint64_t offset, uint8_t value);
  bool divisor_latch_selected() const;
  bool loopback() const;
  // IIR's interrupt identification (bits 0-3) for what is pending now.
  uint8_t PendingInterrupt() const;
  // Sets the line to match PendingInterrupt(), if that changed it.
  void UpdateIrq();

  OutputSink sink_;
  IrqLine irq_;
  bool irq_level_ = false;
  bool thr_interrupt_pending_ = false;
  bool fifos_enabled_ = false;
  uint64_t bytes_out_ = 0;
  uint16_t divisor_ = 12;  // 9600 baud, QEMU's reset value
  uint8_t interrupt_enable_ = 0;
  uint8_t line_control_ = 0;
  uint8_t modem_control_ = 0;
  uint8_t scratch_ = 0;
  // The byte sent to itself in loopback mode, until the guest reads it.
  std::optional<uint8_t> looped_back_;
};

}  // namespace sigvisor

#endif  // SIGVISOR_DEVICES_SERIAL16550_H_
