// COM1 as the guests in the Multiboot notes expect it: a 16550 UART at 8 consecutive
// ports whose transmitter is always ready, so a polling guest never waits, and whose
// output goes straight to a sink (the machine streams it to stdout).
//
// There is no receiver and no interrupts: RBR reads 0, IIR reads "none pending".
// Loopback mode (MCR bit 4) is honoured because common serial-init code probes it
// by sending a byte to itself; without it that probe byte would leak into the output
// and the guest would decide its UART is faulty.
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

  explicit Serial16550(OutputSink sink);

  std::string_view name() const override { return "serial"; }

  // A multi-byte access is taken as consecutive byte accesses, as an ISA bus splits
  // a wide access to an 8-bit device.
  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override;
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override;

  // Bytes sent to the sink so far.
  uint64_t bytes_out() const { return bytes_out_; }
  // The baud-rate divisor last programmed through the divisor latch.
  uint16_t divisor() const { return divisor_; }

 private:
  uint8_t ReadRegister(uint64_t offset);
  void WriteRegister(uint64_t offset, uint8_t value);
  bool divisor_latch_selected() const;
  bool loopback() const;

  OutputSink sink_;
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
