#include "vmm/run/linux_marker.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
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

// The path of the Linux guest's init (guest-kit/linux), the test's argument.
std::string init_path;

// Runs the guest's init on the host with SIGVISOR_MARKER=trap: every marker is an
// ungranted `outl %eax, (%dx)` that faults. As its tracer, reads the registers at each
// fault, decodes them as the VMM does and steps over the one-byte instruction. So the
// guest's encoding and the host's decoding are checked against each other, for real.
std::vector<HypercallResult> TraceMarkers(const std::vector<std::string>& environment) {
  std::vector<HypercallResult> markers;
  const pid_t child = fork();
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    std::vector<char*> envp;
    for (const std::string& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);
    char* argv[] = {const_cast<char*>(init_path.c_str()), nullptr};
    execve(init_path.c_str(), argv, envp.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) == child && WIFSTOPPED(status)) {
    int deliver = WSTOPSIG(status);
    if (deliver == SIGTRAP) deliver = 0;  // the exec
    if (deliver == SIGSEGV) {
      user_regs_struct regs;
      ptrace(PTRACE_GETREGS, child, nullptr, &regs);
      const long text = ptrace(PTRACE_PEEKTEXT, child, reinterpret_cast<void*>(regs.rip), nullptr);
      if ((text & 0xff) == 0xef && (regs.rdx & 0xffff) == SIGVISOR_LINUX_MARKER_PORT) {
        LinuxMarkerRegisters registers{.rax = regs.rax,
                                       .rbx = regs.rbx,
                                       .rcx = regs.rcx,
                                       .rdx = regs.rdx,
                                       .rsi = regs.rsi,
                                       .rdi = regs.rdi,
                                       .r8 = regs.r8,
                                       .r9 = regs.r9,
                                       .r10 = regs.r10,
                                       .r11 = regs.r11};
        const uint32_t eax = static_cast<uint32_t>(regs.rax);
        uint8_t data[4];
        std::memcpy(data, &eax, sizeof(data));
        markers.push_back(DecodeLinuxMarker(data, registers));
        regs.rip += 1;  // outl %eax, (%dx) is the one byte 0xef
        ptrace(PTRACE_SETREGS, child, nullptr, &regs);
        deliver = 0;
      }
    }
    ptrace(PTRACE_CONT, child, nullptr, reinterpret_cast<void*>(static_cast<long>(deliver)));
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "init wait status " << status;
  return markers;
}

// What a measured phase looks like on the wire: five calibrations, then the phase's
// `samples` (init's sigvisor_repeats, default 5), each under the phase's name.
void ExpectPhase(const std::vector<HypercallResult>& markers, size_t& at, std::string_view name,
                 uint64_t ops, uint64_t op_syscall, int samples = 5) {
  for (int i = 0; i < 5 + samples; ++i) {
    const bool measured = i >= 5;
    ASSERT_LT(at + 1, markers.size());
    const HypercallResult& begin = markers[at++];
    const HypercallResult& end = markers[at++];
    ASSERT_EQ(begin.kind, HypercallResult::Kind::kContinue) << begin.diagnosis;
    ASSERT_TRUE(begin.marker.has_value() && begin.marker->begin);
    EXPECT_EQ(begin.marker->name, name);
    EXPECT_EQ(begin.marker->calibration, !measured);
    EXPECT_EQ(begin.marker->ops, measured ? ops : 0);
    EXPECT_EQ(begin.marker->op_syscall,
              measured ? std::optional<uint64_t>(op_syscall) : std::nullopt);
    ASSERT_EQ(end.kind, HypercallResult::Kind::kContinue) << end.diagnosis;
    ASSERT_TRUE(end.marker.has_value());
    EXPECT_FALSE(end.marker->begin);
    EXPECT_LT(begin.guest_tsc, end.guest_tsc);
  }
}

TEST(LinuxMarkerTest, InitsMarkersDecodeAsWritten) {
  const std::vector<HypercallResult> markers =
      TraceMarkers({"SIGVISOR_MARKER=trap", "sigvisor_workload=summary", "sigvisor_ops=3"});
  size_t at = 0;
  ExpectPhase(markers, at, "divzero", 3, 15);   // rt_sigreturn
  ExpectPhase(markers, at, "sig_inst", 3, 13);  // rt_sigaction
  ExpectPhase(markers, at, "sig_hndl", 3, 62);  // kill
  ExpectPhase(markers, at, "sigpingpong", 3, 62);
  ExpectPhase(markers, at, "pipe_rw", 3, 1);  // write
  ASSERT_EQ(markers.size(), at + 1);
  EXPECT_EQ(markers[at].kind, HypercallResult::Kind::kEnd);
  EXPECT_EQ(markers[at].exit_code, 0);
}

}  // namespace
}  // namespace sigvisor

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    fprintf(stderr, "usage: linux_marker_test PATH_TO_GUEST_INIT\n");
    return 2;
  }
  sigvisor::init_path = argv[1];
  return RUN_ALL_TESTS();
}
