#include "arch/x86_64/vmm/machine/linux_marker_gate.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor::x86 {
namespace {

// The registers init sets for `command`, the name packed as x86-64 stores it.
kvm_regs Registers(uint32_t command, const char* name = "") {
  kvm_regs regs = {};
  regs.rax = 0xffffffff00000000ull | SIGVISOR_LINUX_MARKER_MAGIC | command;  // upper half: junk
  regs.rdx = SIGVISOR_LINUX_MARKER_PORT;
  uint64_t words[4] = {};
  std::memcpy(words, name, strnlen(name, sizeof(words)));
  regs.rbx = words[0];
  regs.rcx = words[1];
  regs.rsi = words[2];
  regs.rdi = words[3];
  return regs;
}

// The bytes of the `outl`: eax, little-endian.
std::vector<uint8_t> Written(const kvm_regs& regs) {
  const uint32_t eax = static_cast<uint32_t>(regs.rax);
  std::vector<uint8_t> bytes(4);
  std::memcpy(bytes.data(), &eax, 4);
  return bytes;
}

TEST(LinuxMarkerGateTest, PhaseBeginReadsItsRegisters) {
  kvm_regs regs = Registers(SIGVISOR_LINUX_MARKER_PHASE_BEGIN, "divzero");
  regs.r8 = 50;
  regs.r9 = SIGVISOR_PHASE_CALIBRATION;
  regs.r10 = 123456789;
  regs.r11 = 15 + 1;  // rt_sigreturn
  HypercallResult result = DecodeLinuxMarkerWrite(Written(regs), regs);
  ASSERT_EQ(result.verdict, RunVerdict::kContinue) << result.diagnosis;
  ASSERT_TRUE(result.marker.has_value());
  EXPECT_TRUE(result.marker->begin);
  EXPECT_EQ(result.marker->name, "divzero");
  EXPECT_EQ(result.marker->ops, 50u);
  EXPECT_TRUE(result.marker->calibration);
  EXPECT_EQ(result.marker->op_syscall, 15u);
  EXPECT_EQ(result.guest_tsc, 123456789u);
}

TEST(LinuxMarkerGateTest, NameSpansFourRegistersLowByteFirst) {
  const char full[] = "abcdefghijklmnopqrstuvwxyz012345";  // 32 bytes, no NUL inside
  kvm_regs regs = Registers(SIGVISOR_LINUX_MARKER_PHASE_BEGIN, full);
  EXPECT_EQ(regs.rbx & 0xff, 'a');  // the packing under test is the guest's
  HypercallResult result = DecodeLinuxMarkerWrite(Written(regs), regs);
  ASSERT_TRUE(result.marker.has_value()) << result.diagnosis;
  EXPECT_EQ(result.marker->name, full);

  regs.rcx = 0;  // a NUL at byte 8 ends the name, whatever follows
  result = DecodeLinuxMarkerWrite(Written(regs), regs);
  ASSERT_TRUE(result.marker.has_value());
  EXPECT_EQ(result.marker->name, "abcdefgh");
}

TEST(LinuxMarkerGateTest, PhaseEndAndExit) {
  kvm_regs end = Registers(SIGVISOR_LINUX_MARKER_PHASE_END);
  end.r10 = 987654321;
  HypercallResult result = DecodeLinuxMarkerWrite(Written(end), end);
  ASSERT_TRUE(result.marker.has_value()) << result.diagnosis;
  EXPECT_FALSE(result.marker->begin);
  EXPECT_EQ(result.guest_tsc, 987654321u);

  kvm_regs exit = Registers(SIGVISOR_LINUX_MARKER_EXIT);
  exit.r8 = 0x1ff;
  result = DecodeLinuxMarkerWrite(Written(exit), exit);
  EXPECT_EQ(result.verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(result.outcome, Outcome::kExited);
  EXPECT_EQ(result.exit_code, 0xff);
}

void ExpectMalformed(const HypercallResult& result, std::string_view says) {
  EXPECT_EQ(result.verdict, RunVerdict::kRunFailed);
  EXPECT_EQ(result.outcome, Outcome::kBadDeviceAccess);
  EXPECT_NE(result.diagnosis.find(says), std::string::npos) << result.diagnosis;
}

TEST(LinuxMarkerGateTest, MalformedWritesFail) {
  const kvm_regs regs = Registers(SIGVISOR_LINUX_MARKER_PHASE_END);
  const std::vector<uint8_t> word = Written(regs);
  ExpectMalformed(DecodeLinuxMarkerWrite(std::span(word).first(1), regs),
                  "linux marker: 1-byte write");
  kvm_regs no_magic = regs;
  no_magic.rax = SIGVISOR_LINUX_MARKER_PHASE_END;
  ExpectMalformed(DecodeLinuxMarkerWrite(Written(no_magic), no_magic), "without the magic");
  ExpectMalformed(DecodeLinuxMarkerWrite(Written(Registers(9)), Registers(9)),
                  "unknown command 9");
  // The written word and the registers' eax must agree.
  ExpectMalformed(DecodeLinuxMarkerWrite(word, Registers(SIGVISOR_LINUX_MARKER_EXIT)),
                  "linux marker: 0x53560002 written but eax holds 0x53560003: not the writer's "
                  "registers");
}

// The path of the Linux guest's init (guest-kit/linux), the test's argument.
std::string init_path;

// What the tracer saw at init's ORDERS marker.
struct OrdersSeen {
  uint64_t buffer_len = 0;
  uint64_t flags = 0;         // r10
  uint32_t mxcsr_at_out = 0;  // init's MXCSR when it made the marker
};

// What a traced init wrote: its ORDERS marker, then every other marker decoded.
struct Traced {
  std::optional<OrdersSeen> orders;
  std::vector<HypercallResult> markers;
};

// MXCSR as a vCPU KVM has just made holds it, and so a restore that lost the FPU.
constexpr uint32_t kResetMxcsr = 0x1f80;

// Runs the guest's init on the host with SIGVISOR_MARKER=trap: every marker is an
// ungranted `outl %eax, (%dx)` that faults. As its tracer, reads the registers at each
// fault, decodes them as the VMM does and steps over the one-byte instruction. So the
// guest's encoding and the host's decoding are checked against each other, for real.
// At the ORDERS marker the tracer also does what a restore on a host that gives no FPU
// state does: it puts the FPU in its reset state. init must put its own back.
Traced TraceMarkers(const std::vector<std::string>& environment) {
  Traced traced;
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
        kvm_regs at_exit = {};
        at_exit.rax = regs.rax;
        at_exit.rbx = regs.rbx;
        at_exit.rcx = regs.rcx;
        at_exit.rdx = regs.rdx;
        at_exit.rsi = regs.rsi;
        at_exit.rdi = regs.rdi;
        at_exit.r8 = regs.r8;
        at_exit.r9 = regs.r9;
        at_exit.r10 = regs.r10;
        at_exit.r11 = regs.r11;
        if (static_cast<uint32_t>(regs.rax) ==
            (SIGVISOR_LINUX_MARKER_MAGIC | SIGVISOR_LINUX_MARKER_ORDERS)) {
          user_fpregs_struct fpu = {};
          ptrace(PTRACE_GETFPREGS, child, nullptr, &fpu);
          traced.orders =
              OrdersSeen{.buffer_len = regs.r9, .flags = regs.r10, .mxcsr_at_out = fpu.mxcsr};
          user_fpregs_struct reset = {};
          reset.cwd = 0x37f;
          reset.mxcsr = kResetMxcsr;
          reset.mxcr_mask = fpu.mxcr_mask;
          ptrace(PTRACE_SETFPREGS, child, nullptr, &reset);
        } else {
          traced.markers.push_back(DecodeLinuxMarkerWrite(Written(at_exit), at_exit));
        }
        regs.rip += 1;  // outl %eax, (%dx) is the one byte 0xef
        ptrace(PTRACE_SETREGS, child, nullptr, &regs);
        deliver = 0;
      }
    }
    ptrace(PTRACE_CONT, child, nullptr, reinterpret_cast<void*>(static_cast<long>(deliver)));
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "init wait status " << status;
  return traced;
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
    ASSERT_EQ(begin.verdict, RunVerdict::kContinue) << begin.diagnosis;
    ASSERT_TRUE(begin.marker.has_value() && begin.marker->begin);
    EXPECT_EQ(begin.marker->name, name);
    EXPECT_EQ(begin.marker->calibration, !measured);
    EXPECT_EQ(begin.marker->ops, measured ? ops : 0);
    EXPECT_EQ(begin.marker->op_syscall,
              measured ? std::optional<uint64_t>(op_syscall) : std::nullopt);
    ASSERT_EQ(end.verdict, RunVerdict::kContinue) << end.diagnosis;
    ASSERT_TRUE(end.marker.has_value());
    EXPECT_FALSE(end.marker->begin);
    EXPECT_LT(begin.guest_tsc, end.guest_tsc);
  }
}

TEST(LinuxMarkerGateTest, InitsMarkersDecodeAsWritten) {
  const Traced traced =
      TraceMarkers({"SIGVISOR_MARKER=trap", "sigvisor_workload=summary", "sigvisor_ops=3"});
  const std::vector<HypercallResult>& markers = traced.markers;
  size_t at = 0;
  ExpectPhase(markers, at, "divzero", 3, 15);   // rt_sigreturn
  ExpectPhase(markers, at, "sig_inst", 3, 13);  // rt_sigaction
  ExpectPhase(markers, at, "sig_hndl", 3, 62);  // kill
  ExpectPhase(markers, at, "sigpingpong", 3, 62);
  ExpectPhase(markers, at, "pipe_rw", 3, 1);  // write
  ASSERT_EQ(markers.size(), at + 1);
  EXPECT_EQ(markers[at].verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(markers[at].exit_code, 0);
}

// init holds its FPU state across its quiescent point (SIGVISOR_LINUX_ORDERS_FPU_HELD):
// with xsave where the host's kernel enabled it, and with fxsave as under "noxsave" (a
// PVM host's Linux). The tracer resets the FPU at the ORDERS marker, as a restore that
// saved none does; init's exit status 0 (TraceMarkers) says its probe found its own
// MXCSR again, and the MXCSR at the marker shows the probe was set.
void ExpectFpuHeld(const std::vector<std::string>& environment) {
  const Traced traced = TraceMarkers(environment);
  ASSERT_TRUE(traced.orders.has_value());
  EXPECT_EQ(traced.orders->buffer_len, SIGVISOR_LINUX_ORDERS_MAX);
  EXPECT_EQ(traced.orders->flags, SIGVISOR_LINUX_ORDERS_FPU_HELD);
  EXPECT_NE(traced.orders->mxcsr_at_out, kResetMxcsr);
  EXPECT_EQ(traced.orders->mxcsr_at_out & ~1u, kResetMxcsr);
  ASSERT_FALSE(traced.markers.empty());
  EXPECT_EQ(traced.markers.back().verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(traced.markers.back().exit_code, 0);
}

TEST(LinuxMarkerGateTest, InitHoldsItsFpuAcrossOrdersWithXsave) {
  ExpectFpuHeld({"SIGVISOR_MARKER=trap", "sigvisor_workload=divzero", "sigvisor_ops=1"});
}

TEST(LinuxMarkerGateTest, InitHoldsItsFpuAcrossOrdersWithFxsave) {
  ExpectFpuHeld({"SIGVISOR_MARKER=trap", "SIGVISOR_FPU_SAVE=fxsave", "sigvisor_workload=divzero",
                 "sigvisor_ops=1"});
}

}  // namespace
}  // namespace sigvisor::x86

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    fprintf(stderr, "usage: linux_marker_gate_test PATH_TO_GUEST_INIT\n");
    return 2;
  }
  sigvisor::x86::init_path = argv[1];
  return RUN_ALL_TESTS();
}
