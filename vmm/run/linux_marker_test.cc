#include "vmm/run/linux_marker.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

uint32_t Word(uint32_t command) { return SIGVISOR_LINUX_MARKER_MAGIC | command; }

LinuxMarkerArguments Named(const char* name) {
  LinuxMarkerArguments arguments;
  std::memcpy(arguments.name.data(), name, strnlen(name, arguments.name.size()));
  return arguments;
}

TEST(LinuxMarkerTest, PhaseBegin) {
  LinuxMarkerArguments arguments = Named("divzero");
  arguments.ops = 50;
  arguments.flags = 0;
  arguments.guest_tsc = 123456789;
  arguments.op_syscall_plus1 = 15 + 1;  // rt_sigreturn
  HypercallResult result = DecodeLinuxMarker(Word(SIGVISOR_LINUX_MARKER_PHASE_BEGIN), arguments);
  ASSERT_EQ(result.verdict, RunVerdict::kContinue) << result.diagnosis;
  ASSERT_TRUE(result.marker.has_value());
  EXPECT_TRUE(result.marker->begin);
  EXPECT_EQ(result.marker->name, "divzero");
  EXPECT_EQ(result.marker->ops, 50u);
  EXPECT_FALSE(result.marker->calibration);
  EXPECT_EQ(result.marker->op_syscall, 15u);
  EXPECT_EQ(result.guest_tsc, 123456789u);
}

TEST(LinuxMarkerTest, CalibrationWithoutSyscall) {
  LinuxMarkerArguments arguments = Named("sig_hndl");
  arguments.flags = SIGVISOR_PHASE_CALIBRATION;
  HypercallResult result = DecodeLinuxMarker(Word(SIGVISOR_LINUX_MARKER_PHASE_BEGIN), arguments);
  ASSERT_TRUE(result.marker.has_value()) << result.diagnosis;
  EXPECT_TRUE(result.marker->calibration);
  EXPECT_EQ(result.marker->ops, 0u);
  EXPECT_FALSE(result.marker->op_syscall.has_value());
}

TEST(LinuxMarkerTest, NameUsesAll32BytesAndStopsAtNul) {
  const char full[] = "abcdefghijklmnopqrstuvwxyz012345";  // 32 bytes, no NUL inside
  LinuxMarkerArguments arguments = Named(full);
  HypercallResult result = DecodeLinuxMarker(Word(SIGVISOR_LINUX_MARKER_PHASE_BEGIN), arguments);
  ASSERT_TRUE(result.marker.has_value()) << result.diagnosis;
  EXPECT_EQ(result.marker->name, full);

  arguments.name[8] = '\0';  // a NUL ends the name, whatever follows
  result = DecodeLinuxMarker(Word(SIGVISOR_LINUX_MARKER_PHASE_BEGIN), arguments);
  ASSERT_TRUE(result.marker.has_value());
  EXPECT_EQ(result.marker->name, "abcdefgh");
}

TEST(LinuxMarkerTest, PhaseEnd) {
  LinuxMarkerArguments arguments = Named("AAAAAAAA");  // not read
  arguments.guest_tsc = 987654321;
  HypercallResult result = DecodeLinuxMarker(Word(SIGVISOR_LINUX_MARKER_PHASE_END), arguments);
  ASSERT_TRUE(result.marker.has_value()) << result.diagnosis;
  EXPECT_FALSE(result.marker->begin);
  EXPECT_EQ(result.guest_tsc, 987654321u);
}

TEST(LinuxMarkerTest, Exit) {
  LinuxMarkerArguments arguments;
  arguments.exit_status = 0x1ff;  // the VMM takes status & 0xff
  HypercallResult result = DecodeLinuxMarker(Word(SIGVISOR_LINUX_MARKER_EXIT), arguments);
  EXPECT_EQ(result.verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(result.outcome, Outcome::kExited);
  EXPECT_EQ(result.exit_code, 0xff);
  EXPECT_FALSE(result.marker.has_value());
}

TEST(LinuxMarkerTest, TheWordIsFourBytesWithTheMagic) {
  const uint32_t end = Word(SIGVISOR_LINUX_MARKER_PHASE_END);
  uint8_t bytes[4];
  std::memcpy(bytes, &end, sizeof(bytes));
  absl::StatusOr<uint32_t> word = LinuxMarkerWord(bytes);
  ASSERT_TRUE(word.ok()) << word.status();
  EXPECT_EQ(*word, end);
  EXPECT_EQ(LinuxMarkerWord(std::span(bytes).first(1)).status().message(),
            "1-byte write; the protocol writes 4 bytes (outl)");
  EXPECT_EQ(LinuxMarkerWord(std::span(bytes).first(2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  const uint32_t no_magic = SIGVISOR_LINUX_MARKER_PHASE_END;
  std::memcpy(bytes, &no_magic, sizeof(bytes));
  EXPECT_EQ(LinuxMarkerWord(bytes).status().message(), "0x2 written, without the magic 0x53560000");
}

void ExpectMalformed(const HypercallResult& result, std::string_view says) {
  EXPECT_EQ(result.verdict, RunVerdict::kRunFailed);
  EXPECT_EQ(result.outcome, Outcome::kBadDeviceAccess);
  EXPECT_TRUE(result.diagnosis.starts_with("linux marker: ")) << result.diagnosis;
  EXPECT_NE(result.diagnosis.find(says), std::string::npos) << result.diagnosis;
  EXPECT_EQ(result.diagnosis.find('\n'), std::string::npos);
}

TEST(LinuxMarkerTest, UnknownCommandsAndFlagsFailTheRun) {
  ExpectMalformed(DecodeLinuxMarker(Word(9), {}), "unknown command 9");
  ExpectMalformed(DecodeLinuxMarker(Word(0), {}), "unknown command 0");
  LinuxMarkerArguments flags = Named("x");
  flags.flags = 0x2;
  ExpectMalformed(DecodeLinuxMarker(Word(SIGVISOR_LINUX_MARKER_PHASE_BEGIN), flags),
                  "unknown flags 0x2");
  ExpectMalformed(LinuxMarkerMalformed("why"), "why");
}

}  // namespace
}  // namespace sigvisor
