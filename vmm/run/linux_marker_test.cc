#include "vmm/run/linux_marker.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

// The registers init sets for `command`, the name packed as x86-64 stores it.
LinuxMarkerRegisters Registers(uint32_t command, const char* name = "") {
  LinuxMarkerRegisters registers;
  registers.rax =
      0xffffffff00000000ull | SIGVISOR_LINUX_MARKER_MAGIC | command;  // upper half: junk
  registers.rdx = SIGVISOR_LINUX_MARKER_PORT;
  uint64_t words[4] = {};
  std::memcpy(words, name, strnlen(name, sizeof(words)));
  registers.rbx = words[0];
  registers.rcx = words[1];
  registers.rsi = words[2];
  registers.rdi = words[3];
  return registers;
}

// The bytes of the `outl`: eax, little-endian.
std::vector<uint8_t> Written(const LinuxMarkerRegisters& registers) {
  const uint32_t eax = static_cast<uint32_t>(registers.rax);
  std::vector<uint8_t> bytes(4);
  std::memcpy(bytes.data(), &eax, 4);
  return bytes;
}

TEST(LinuxMarkerTest, PhaseBegin) {
  LinuxMarkerRegisters registers = Registers(SIGVISOR_LINUX_MARKER_PHASE_BEGIN, "divzero");
  registers.r8 = 50;
  registers.r9 = 0;
  registers.r10 = 123456789;
  registers.r11 = 15 + 1;  // rt_sigreturn
  HypercallResult result = DecodeLinuxMarker(Written(registers), registers);
  ASSERT_EQ(result.kind, HypercallResult::Kind::kContinue) << result.diagnosis;
  ASSERT_TRUE(result.marker.has_value());
  EXPECT_TRUE(result.marker->begin);
  EXPECT_EQ(result.marker->name, "divzero");
  EXPECT_EQ(result.marker->ops, 50u);
  EXPECT_FALSE(result.marker->calibration);
  EXPECT_EQ(result.marker->op_syscall, 15u);
  EXPECT_EQ(result.guest_tsc, 123456789u);
}

TEST(LinuxMarkerTest, CalibrationWithoutSyscall) {
  LinuxMarkerRegisters registers = Registers(SIGVISOR_LINUX_MARKER_PHASE_BEGIN, "sig_hndl");
  registers.r9 = SIGVISOR_PHASE_CALIBRATION;
  HypercallResult result = DecodeLinuxMarker(Written(registers), registers);
  ASSERT_TRUE(result.marker.has_value()) << result.diagnosis;
  EXPECT_TRUE(result.marker->calibration);
  EXPECT_EQ(result.marker->ops, 0u);
  EXPECT_FALSE(result.marker->op_syscall.has_value());
}

TEST(LinuxMarkerTest, NameUsesAllFourRegistersAndStopsAtNul) {
  const char full[] = "abcdefghijklmnopqrstuvwxyz012345";  // 32 bytes, no NUL inside
  LinuxMarkerRegisters registers = Registers(SIGVISOR_LINUX_MARKER_PHASE_BEGIN, full);
  HypercallResult result = DecodeLinuxMarker(Written(registers), registers);
  ASSERT_TRUE(result.marker.has_value()) << result.diagnosis;
  EXPECT_EQ(result.marker->name, full);

  registers.rcx = 0;  // a NUL at byte 8 ends the name, whatever follows
  result = DecodeLinuxMarker(Written(registers), registers);
  ASSERT_TRUE(result.marker.has_value());
  EXPECT_EQ(result.marker->name, "abcdefgh");
}

TEST(LinuxMarkerTest, PhaseEnd) {
  LinuxMarkerRegisters registers = Registers(SIGVISOR_LINUX_MARKER_PHASE_END);
  registers.r10 = 987654321;
  registers.rbx = 0x4141414141414141;  // not read
  HypercallResult result = DecodeLinuxMarker(Written(registers), registers);
  ASSERT_TRUE(result.marker.has_value()) << result.diagnosis;
  EXPECT_FALSE(result.marker->begin);
  EXPECT_EQ(result.guest_tsc, 987654321u);
}

TEST(LinuxMarkerTest, Exit) {
  LinuxMarkerRegisters registers = Registers(SIGVISOR_LINUX_MARKER_EXIT);
  registers.r8 = 0x1ff;  // the VMM takes status & 0xff
  HypercallResult result = DecodeLinuxMarker(Written(registers), registers);
  EXPECT_EQ(result.kind, HypercallResult::Kind::kEnd);
  EXPECT_EQ(result.outcome, Outcome::kExited);
  EXPECT_EQ(result.exit_code, 0xff);
  EXPECT_FALSE(result.marker.has_value());
}

void ExpectMalformed(std::span<const uint8_t> data, const LinuxMarkerRegisters& registers,
                     std::string_view says) {
  HypercallResult result = DecodeLinuxMarker(data, registers);
  EXPECT_EQ(result.kind, HypercallResult::Kind::kFail);
  EXPECT_EQ(result.outcome, Outcome::kBadDeviceAccess);
  EXPECT_NE(result.diagnosis.find(says), std::string::npos) << result.diagnosis;
  EXPECT_EQ(result.diagnosis.find('\n'), std::string::npos);
}

TEST(LinuxMarkerTest, MalformedWritesFail) {
  LinuxMarkerRegisters registers = Registers(SIGVISOR_LINUX_MARKER_PHASE_END);
  const std::vector<uint8_t> word = Written(registers);
  ExpectMalformed(std::span(word).first(1), registers, "1-byte write");
  ExpectMalformed(std::span(word).first(2), registers, "2-byte write");

  LinuxMarkerRegisters no_magic = registers;
  no_magic.rax = SIGVISOR_LINUX_MARKER_PHASE_END;
  ExpectMalformed(Written(no_magic), no_magic, "without the magic");

  LinuxMarkerRegisters unknown = Registers(9);
  ExpectMalformed(Written(unknown), unknown, "unknown command 9");
  LinuxMarkerRegisters zero = Registers(0);
  ExpectMalformed(Written(zero), zero, "unknown command 0");

  LinuxMarkerRegisters flags = Registers(SIGVISOR_LINUX_MARKER_PHASE_BEGIN, "x");
  flags.r9 = 0x2;
  ExpectMalformed(Written(flags), flags, "unknown flags 0x2");

  // The written word and the registers' eax must agree.
  LinuxMarkerRegisters other = Registers(SIGVISOR_LINUX_MARKER_EXIT);
  ExpectMalformed(word, other, "not the writer's registers");
}

}  // namespace
}  // namespace sigvisor
