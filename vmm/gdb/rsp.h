// The GDB Remote Serial Protocol's framing over a connected socket: `$data#cc`
// packets with their modulo-256 checksum, `+`/`-` acknowledgements (until
// QStartNoAckMode), binary escaping (`}` then the byte xor 0x20) and the interrupt
// byte 0x03 that gdb sends for Ctrl-C.
#ifndef SIGVISOR_VMM_GDB_RSP_H_
#define SIGVISOR_VMM_GDB_RSP_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace sigvisor::gdb {

// Hex helpers ("%02x" per byte; a value as its little-endian bytes).
std::string HexEncode(std::span<const uint8_t> bytes);
std::optional<std::vector<uint8_t>> HexDecode(std::string_view hex);
std::optional<uint64_t> ParseHex(std::string_view hex);  // big-endian number ("1f" = 31)
std::string HexLittleEndian(uint64_t value, size_t bytes);

// `}`-escapes the bytes gdb cannot take raw in a packet ($, #, }, *).
std::string EscapeBinary(std::span<const uint8_t> bytes);
std::vector<uint8_t> UnescapeBinary(std::string_view data);

// "$data#cc".
std::string Frame(std::string_view data);

class RspConnection {
 public:
  // Takes ownership of a connected stream socket.
  explicit RspConnection(int fd);
  ~RspConnection();
  RspConnection(const RspConnection&) = delete;
  RspConnection& operator=(const RspConnection&) = delete;

  struct Incoming {
    bool interrupt = false;  // a 0x03 byte
    std::string packet;      // the data of a packet (checksum verified)
  };

  // The next packet or interrupt; blocks. NotFound when the peer closed.
  absl::StatusOr<Incoming> Receive();
  // Sends a packet; in acknowledged mode, waits for `+` (resends on `-`).
  absl::Status Send(std::string_view data);

  void set_no_ack(bool no_ack) { no_ack_ = no_ack; }
  int fd() const { return fd_; }
  // Bytes already read from the socket and not yet parsed (an interrupt byte may
  // sit there).
  bool HasBuffered() const { return !buffer_.empty(); }

 private:
  absl::StatusOr<char> NextByte();
  absl::Status WriteAll(std::string_view bytes);

  int fd_;
  bool no_ack_ = false;
  std::string buffer_;
};

}  // namespace sigvisor::gdb

#endif  // SIGVISOR_VMM_GDB_RSP_H_
