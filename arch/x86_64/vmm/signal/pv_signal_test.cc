// The signal=pv hypercalls against a guest memory with hand-made page tables: a frame
// written whole with the CPU's A/D bits, registers set, sigreturn's restore; every
// doubt declined with nothing touched; hostile pointers refused, never followed out of
// RAM; and --check-signal-frames' comparison, which must notice one byte.
#include "arch/x86_64/vmm/signal/pv_signal.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kPml4 = 0x1000, kPdpt = 0x2000, kPd = 0x3000, kPt = 0x4000;
constexpr uint64_t kArgs = 0x5000, kRegs = 0x6000, kInfo = 0x6800;
constexpr uint64_t kStackPageGva = 0x7ffdf000, kStackPageGpa = 0x100000;
constexpr uint64_t kUserRsp = 0x7ffdff00;
constexpr uint64_t kPresentRwUser = 0x7;

class PvSignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<GuestMemory> m = GuestMemory::Create(4 << 20);
    ASSERT_TRUE(m.ok());
    memory_.emplace(*std::move(m));
    Put(kPml4, kPdpt | kPresentRwUser);
    Put(kPdpt + 1 * 8, kPd | kPresentRwUser);  // 0x40000000-0x7fffffff
    Put(kPd + ((kStackPageGva >> 21) & 511) * 8, kPt | kPresentRwUser);
    Put(PteGpa(), kStackPageGpa | kPresentRwUser);
    PtRegs regs{};
    regs.rsp = kUserRsp;
    regs.rip = 0x40001000;
    regs.rax = 0x1234;
    regs.cs = 0x33;
    regs.ss = 0x2b;
    regs.rflags = 0x202;
    user_ = regs;
    ASSERT_TRUE(memory_->WriteObject(kRegs, regs).ok());
    std::vector<uint8_t> info(48, 0x5a);
    ASSERT_TRUE(memory_->Write(kInfo, info).ok());
  }

  void Put(uint64_t gpa, uint64_t value) { ASSERT_TRUE(memory_->WriteObject(gpa, value).ok()); }
  uint64_t Get(uint64_t gpa) { return *memory_->ReadObject<uint64_t>(gpa); }
  static uint64_t PteGpa() { return kPt + ((kStackPageGva >> 12) & 511) * 8; }

  sigvisor_hc_signal_frame FrameArgs() {
    sigvisor_hc_signal_frame args{};
    args.regs_gpa = kRegs;
    args.page_table_gpa = kPml4;
    args.info_gpa = kInfo;
    args.info_bytes = 48;
    args.handler = 0x40002000;
    args.restorer = 0x40003000;
    args.action_flags = kSaSiginfo | kSaRestorer;
    args.saved_mask = 0x100;
    args.signo = 8;
    args.phase = SIGVISOR_SIGNAL_PV_ASK;
    args.result = SIGVISOR_SIGNAL_PV_DECLINED;
    return args;
  }

  HypercallResult Call(PvSignalFrames& frames, uint64_t nr, uint32_t gpa) {
    HypercallTable table;
    EXPECT_TRUE(frames.Register(table).ok());
    const uint8_t arg[4] = {static_cast<uint8_t>(gpa), static_cast<uint8_t>(gpa >> 8),
                            static_cast<uint8_t>(gpa >> 16), static_cast<uint8_t>(gpa >> 24)};
    return table.Call(nr, arg);
  }

  int32_t FrameResult() { return memory_->ReadObject<sigvisor_hc_signal_frame>(kArgs)->result; }
  int32_t SigreturnResult() { return memory_->ReadObject<sigvisor_hc_sigreturn>(kArgs)->result; }

  // The frame's bytes in guest RAM (it lies in the one stack page).
  LinuxRtSigframe FrameAt(uint64_t gva) {
    return *memory_->ReadObject<LinuxRtSigframe>(kStackPageGpa + (gva - kStackPageGva));
  }

  std::optional<GuestMemory> memory_;
  PtRegs user_{};
};

TEST_F(PvSignalTest, WritesTheFrameAndSetsTheHandlersRegisters) {
  PvSignalFrames frames(*memory_, /*check=*/false);
  ASSERT_TRUE(memory_->WriteObject(kArgs, FrameArgs()).ok());
  HypercallResult r = Call(frames, SIGVISOR_HC_SIGNAL_FRAME, kArgs);
  EXPECT_EQ(r.verdict, RunVerdict::kContinue);
  EXPECT_FALSE(r.instrument);  // the guest's own exit, counted
  EXPECT_EQ(FrameResult(), SIGVISOR_SIGNAL_PV_DONE);
  EXPECT_EQ(frames.counts().frames_written, 1u);

  const PtRegs regs = *memory_->ReadObject<PtRegs>(kRegs);
  const uint64_t sp = ((kUserRsp - 128 - 440) & ~15ull) - 8;
  EXPECT_EQ(regs.rsp, sp);
  EXPECT_EQ(regs.rip, 0x40002000u);
  EXPECT_EQ(regs.rdi, 8u);
  EXPECT_EQ(regs.rsi, sp + 312);
  const LinuxRtSigframe frame = FrameAt(sp);
  EXPECT_EQ(frame.pretcode, 0x40003000u);
  EXPECT_EQ(frame.uc.uc_mcontext.rip, 0x40001000u);
  EXPECT_EQ(frame.uc.uc_mcontext.rax, 0x1234u);
  EXPECT_EQ(frame.uc.uc_sigmask, 0x100u);
  EXPECT_EQ(frame.info[0], 0x5a);
  EXPECT_EQ(frame.info[48], 0);  // past the 48 bytes copied
  // The walk's Accessed bits, and Dirty on the leaf, as the CPU would have set them.
  EXPECT_EQ(Get(PteGpa()) & 0x60, 0x60u);
  EXPECT_EQ(Get(kPml4) & 0x60, 0x20u);

  // The handler returns: its `ret` popped pretcode, and rt_sigreturn restores.
  PtRegs at_sigreturn = regs;
  at_sigreturn.rsp = sp + 8;
  at_sigreturn.rax = 15;
  ASSERT_TRUE(memory_->WriteObject(kRegs, at_sigreturn).ok());
  sigvisor_hc_sigreturn ret{};
  ret.regs_gpa = kRegs;
  ret.page_table_gpa = kPml4;
  ret.result = SIGVISOR_SIGNAL_PV_DECLINED;
  ASSERT_TRUE(memory_->WriteObject(kArgs, ret).ok());
  r = Call(frames, SIGVISOR_HC_SIGRETURN, kArgs);
  EXPECT_EQ(r.verdict, RunVerdict::kContinue);
  EXPECT_EQ(SigreturnResult(), SIGVISOR_SIGNAL_PV_DONE);
  EXPECT_EQ(memory_->ReadObject<sigvisor_hc_sigreturn>(kArgs)->mask, 0x100u);
  const PtRegs restored = *memory_->ReadObject<PtRegs>(kRegs);
  EXPECT_EQ(restored.rsp, kUserRsp);
  EXPECT_EQ(restored.rip, 0x40001000u);
  EXPECT_EQ(restored.rax, 0x1234u);
  EXPECT_EQ(frames.counts().sigreturns_restored, 1u);
}

TEST_F(PvSignalTest, DeclinesAReadOnlyStackAndTouchesNothing) {
  Put(PteGpa(), kStackPageGpa | 0x5);  // present, user, not writable
  PvSignalFrames frames(*memory_, false);
  ASSERT_TRUE(memory_->WriteObject(kArgs, FrameArgs()).ok());
  Call(frames, SIGVISOR_HC_SIGNAL_FRAME, kArgs);
  EXPECT_EQ(FrameResult(), SIGVISOR_SIGNAL_PV_DECLINED);
  EXPECT_EQ(memory_->ReadObject<PtRegs>(kRegs)->rsp, kUserRsp);
  EXPECT_EQ(Get(PteGpa()), kStackPageGpa | 0x5);  // no A/D bits either
  EXPECT_EQ(frames.counts().declined.at("a frame not mapped present, user and writable"), 1u);
}

// Checking decides as writing does: a stack the VMM would not write is left to the
// kernel unchecked, not compared with a kernel that then faults.
TEST_F(PvSignalTest, CheckModeDeclinesWhatWritingWouldDecline) {
  Put(PteGpa(), kStackPageGpa | 0x5);  // present, user, not writable
  PvSignalFrames frames(*memory_, /*check=*/true);
  ASSERT_TRUE(memory_->WriteObject(kArgs, FrameArgs()).ok());
  EXPECT_TRUE(Call(frames, SIGVISOR_HC_SIGNAL_FRAME, kArgs).instrument);
  EXPECT_EQ(FrameResult(), SIGVISOR_SIGNAL_PV_DECLINED);
  EXPECT_EQ(frames.counts().declined.at("a frame not mapped present, user and writable"), 1u);
  EXPECT_TRUE(frames.counts().mismatches.empty());
}

TEST_F(PvSignalTest, HostilePointersAreDeclinedOrRefusedNeverFollowed) {
  PvSignalFrames frames(*memory_, false);
  const uint64_t far = 0xffff'ffff'ffff'f000;
  for (auto edit : std::vector<void (*)(sigvisor_hc_signal_frame&)>{
           [](sigvisor_hc_signal_frame& a) { a.regs_gpa = 0xffff'ffff'ffff'fff0; },
           [](sigvisor_hc_signal_frame& a) { a.page_table_gpa = 0xffff'ffff'ffff'f000; },
           [](sigvisor_hc_signal_frame& a) { a.info_gpa = 0x3ffff0; },
           [](sigvisor_hc_signal_frame& a) { a.info_bytes = ~0ull; },
           [](sigvisor_hc_signal_frame& a) { a.signo = 1000; },
           [](sigvisor_hc_signal_frame& a) { a.signo = -5; },
       }) {
    sigvisor_hc_signal_frame args = FrameArgs();
    edit(args);
    ASSERT_TRUE(memory_->WriteObject(kArgs, args).ok());
    HypercallResult r = Call(frames, SIGVISOR_HC_SIGNAL_FRAME, kArgs);
    EXPECT_EQ(r.verdict, RunVerdict::kContinue);
    EXPECT_EQ(FrameResult(), SIGVISOR_SIGNAL_PV_DECLINED);
  }
  EXPECT_EQ(frames.counts().frames_written, 0u);
  // An argument block outside guest RAM is a malformed call.
  HypercallResult r = Call(frames, SIGVISOR_HC_SIGNAL_FRAME, static_cast<uint32_t>(far));
  EXPECT_EQ(r.verdict, RunVerdict::kRunFailed);
  EXPECT_EQ(r.outcome, Outcome::kBadDeviceAccess);
  EXPECT_NE(r.diagnosis.find("hypercall signal_frame"), std::string::npos) << r.diagnosis;
}

TEST_F(PvSignalTest, CheckModeComparesTheKernelsFrameByteForByte) {
  PvSignalFrames frames(*memory_, /*check=*/true);
  ASSERT_TRUE(memory_->WriteObject(kArgs, FrameArgs()).ok());
  HypercallResult r = Call(frames, SIGVISOR_HC_SIGNAL_FRAME, kArgs);
  EXPECT_TRUE(r.instrument);
  EXPECT_EQ(FrameResult(), SIGVISOR_SIGNAL_PV_CHECK);
  EXPECT_EQ(memory_->ReadObject<PtRegs>(kRegs)->rsp, kUserRsp);  // nothing written

  // "The kernel" writes the frame: here, the builder's own bytes, one of them wrong.
  std::vector<uint8_t> info(48, 0x5a);
  SignalFrameRequest request = {.signo = 8,
                                .handler = 0x40002000,
                                .restorer = 0x40003000,
                                .action_flags = kSaSiginfo | kSaRestorer,
                                .saved_mask = 0x100,
                                .info = info};
  absl::StatusOr<SignalFramePlan> plan = PlanSignalFrame(request, user_);
  ASSERT_TRUE(plan.ok());
  const uint64_t frame_gpa = kStackPageGpa + (plan->address - kStackPageGva);
  auto kernel_writes = [&](const LinuxRtSigframe& frame) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(&frame);
    for (const FrameRange& range : plan->written) {
      ASSERT_TRUE(
          memory_->Write(frame_gpa + range.offset, {bytes + range.offset, range.length}).ok());
    }
    ASSERT_TRUE(memory_->WriteObject(kRegs, plan->regs).ok());
    sigvisor_hc_signal_frame built = FrameArgs();
    built.phase = SIGVISOR_SIGNAL_PV_BUILT;
    built.kernel_result = 0;
    ASSERT_TRUE(memory_->WriteObject(kArgs, built).ok());
    EXPECT_TRUE(Call(frames, SIGVISOR_HC_SIGNAL_FRAME, kArgs).instrument);
  };
  kernel_writes(plan->frame);
  EXPECT_EQ(frames.counts().frames_compared, 1u);
  EXPECT_TRUE(frames.counts().mismatches.empty()) << frames.counts().mismatches[0];

  // Again, with the saved rip off by one.
  ASSERT_TRUE(memory_->WriteObject(kRegs, user_).ok());
  ASSERT_TRUE(memory_->WriteObject(kArgs, FrameArgs()).ok());
  Call(frames, SIGVISOR_HC_SIGNAL_FRAME, kArgs);
  LinuxRtSigframe wrong = plan->frame;
  wrong.uc.uc_mcontext.rip += 1;
  kernel_writes(wrong);
  ASSERT_EQ(frames.counts().mismatches.size(), 1u);
  EXPECT_NE(frames.counts().mismatches[0].find("uc.uc_mcontext.rip"), std::string::npos)
      << frames.counts().mismatches[0];
  // A report with no check pending is a mismatch too, not a crash.
  Call(frames, SIGVISOR_HC_SIGNAL_FRAME, kArgs);
  EXPECT_EQ(frames.counts().mismatches.size(), 2u);
}

}  // namespace
}  // namespace sigvisor::x86
