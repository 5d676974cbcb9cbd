#include "vmm/gdb/rsp.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"

namespace sigvisor::gdb {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

uint8_t Checksum(std::string_view data) {
  uint8_t sum = 0;
  for (char c : data) sum += static_cast<uint8_t>(c);
  return sum;
}

}  // namespace

std::string HexEncode(std::span<const uint8_t> bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::optional<std::vector<uint8_t>> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexDigit(hex[2 * i]), lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

std::optional<uint64_t> ParseHex(std::string_view hex) {
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : hex) {
    const int d = HexDigit(c);
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

std::string HexLittleEndian(uint64_t value, size_t bytes) {
  std::vector<uint8_t> raw(bytes);
  for (size_t i = 0; i < bytes; ++i) raw[i] = static_cast<uint8_t>(i < 8 ? value >> (8 * i) : 0);
  return HexEncode(raw);
}

std::string EscapeBinary(std::span<const uint8_t> bytes) {
  std::string out;
  for (uint8_t b : bytes) {
    if (b == '$' || b == '#' || b == '}' || b == '*') {
      out.push_back('}');
      out.push_back(static_cast<char>(b ^ 0x20));
    } else {
      out.push_back(static_cast<char>(b));
    }
  }
  return out;
}

std::vector<uint8_t> UnescapeBinary(std::string_view data) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '}' && i + 1 < data.size()) {
      out.push_back(static_cast<uint8_t>(data[++i] ^ 0x20));
    } else {
      out.push_back(static_cast<uint8_t>(data[i]));
    }
  }
  return out;
}

std::string Frame(std::string_view data) {
  return absl::StrFormat("$%s#%02x", std::string(data), Checksum(data));
}

RspConnection::RspConnection(int fd) : fd_(fd) {}

RspConnection::~RspConnection() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<char> RspConnection::NextByte() {
  if (buffer_.empty()) {
    char chunk[4096];
    ssize_t n;
    do {
      n = ::recv(fd_, chunk, sizeof(chunk), 0);
    } while (n < 0 && errno == EINTR);
    if (n == 0) return absl::NotFoundError("gdb closed the connection");
    if (n < 0) return absl::UnavailableError(absl::StrFormat("reading from gdb: %s", strerror(errno)));
    buffer_.assign(chunk, static_cast<size_t>(n));
  }
  const char c = buffer_.front();
  buffer_.erase(0, 1);
  return c;
}

absl::Status RspConnection::WriteAll(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrFormat("writing to gdb: %s", strerror(errno)));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<RspConnection::Incoming> RspConnection::Receive() {
  for (;;) {
    absl::StatusOr<char> c = NextByte();
    if (!c.ok()) return c.status();
    if (*c == '\x03') return Incoming{true, ""};
    if (*c != '$') continue;  // acks and noise between packets
    // A packet is bounded (we tell gdb PacketSize=0x4000; escaped binary data can
    // double it): a peer that never sends '#' cannot grow this without limit. An
    // overlong packet is read to its end, dropped and refused with '-'.
    constexpr size_t kMaxPacket = 0x10000;
    std::string data;
    bool overlong = false;
    for (;;) {
      absl::StatusOr<char> d = NextByte();
      if (!d.ok()) return d.status();
      if (*d == '#') break;
      if (data.size() < kMaxPacket) {
        data.push_back(*d);
      } else {
        overlong = true;
      }
    }
    absl::StatusOr<char> h1 = NextByte();
    if (!h1.ok()) return h1.status();
    absl::StatusOr<char> h2 = NextByte();
    if (!h2.ok()) return h2.status();
    const int hi = HexDigit(*h1), lo = HexDigit(*h2);
    if (overlong) {
      if (absl::Status s = WriteAll("-"); !s.ok()) return s;
      continue;
    }
    const bool good = hi >= 0 && lo >= 0 && (hi << 4 | lo) == Checksum(data);
    if (!no_ack_) {
      if (absl::Status s = WriteAll(good ? "+" : "-"); !s.ok()) return s;
    }
    if (good || no_ack_) return Incoming{false, std::move(data)};
  }
}

absl::Status RspConnection::Send(std::string_view data) {
  const std::string framed = Frame(data);
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (absl::Status s = WriteAll(framed); !s.ok()) return s;
    if (no_ack_) return absl::OkStatus();
    for (;;) {
      absl::StatusOr<char> c = NextByte();
      if (!c.ok()) return c.status();
      if (*c == '+') return absl::OkStatus();
      if (*c == '-') break;
      if (*c == '\x03') continue;  // an interrupt racing our reply: nothing to stop
    }
  }
  return absl::UnavailableError("gdb kept rejecting a packet");
}

}  // namespace sigvisor::gdb
