#include "arch/x86_64/vmm/machine/port_io_site.h"

namespace sigvisor::x86 {
namespace {

bool IsLegacyPrefix(uint8_t b) {
  switch (b) {
    case 0x66: case 0x67: case 0xf2: case 0xf3:                          // size, rep
    case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:  // segments
      return true;
    default: return false;
  }
}

}  // namespace

std::optional<size_t> MatchPortIo(std::span<const uint8_t> bytes, const CpuLocation::PortIo& io) {
  size_t i = 0;
  bool operand16 = false;
  while (i < bytes.size() && i + 2 < kMaxPortIoBytes && IsLegacyPrefix(bytes[i])) {
    operand16 = operand16 || bytes[i] == 0x66;
    ++i;
  }
  if (i < bytes.size() && (bytes[i] & 0xf0) == 0x40) ++i;  // REX: no bearing on port I/O
  if (i >= bytes.size()) return std::nullopt;
  const uint8_t op = bytes[i++];
  bool out = false, byte_sized = false, imm8 = false;
  switch (op) {
    case 0xe4: case 0xe5: case 0xe6: case 0xe7:  // in/out with an imm8 port
      imm8 = true;
      [[fallthrough]];
    case 0xec: case 0xed: case 0xee: case 0xef:  // in/out with the port in DX
      out = (op & 0x02) != 0;
      byte_sized = (op & 0x01) == 0;
      break;
    case 0x6c: case 0x6d: case 0x6e: case 0x6f:  // ins/outs, port in DX
      out = (op & 0x02) != 0;
      byte_sized = (op & 0x01) == 0;
      break;
    default: return std::nullopt;
  }
  const uint8_t size = byte_sized ? 1 : operand16 ? 2 : 4;
  if (out != io.out || size != io.size) return std::nullopt;
  if (imm8) {
    if (i >= bytes.size() || bytes[i] != io.port) return std::nullopt;
    ++i;
  } else if (!io.port_in_register) {
    return std::nullopt;
  }
  return i;
}

std::optional<uint64_t> PortIoInstructionBack(std::span<const uint8_t> before,
                                              std::span<const uint8_t> at,
                                              const CpuLocation::PortIo& io) {
  if (MatchPortIo(at, io)) return 0;
  for (size_t back = 1; back <= before.size() && back <= kMaxPortIoBytes; ++back) {
    if (MatchPortIo(before.last(back), io) == back) return back;
  }
  return std::nullopt;
}

uint64_t PortIoInstructionAddress(
    uint64_t rip, const CpuLocation::PortIo& io,
    const std::function<std::vector<uint8_t>(uint64_t address, size_t n)>& read) {
  // Byte by byte backwards: the bytes just before rip may be readable when those
  // further back (another page) are not.
  std::vector<uint8_t> before;
  for (uint64_t back = 1; back <= kMaxPortIoBytes && back <= rip; ++back) {
    std::vector<uint8_t> byte = read(rip - back, 1);
    if (byte.empty()) break;
    before.insert(before.begin(), byte.front());
  }
  const std::vector<uint8_t> at = read(rip, kMaxPortIoBytes);
  return rip - PortIoInstructionBack(before, at, io).value_or(0);
}

}  // namespace sigvisor::x86
