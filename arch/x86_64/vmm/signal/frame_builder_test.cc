// The kernel's frame code restated (frame_builder.h): where the frame goes, what it
// holds, which bytes are written, the handler's registers, sigreturn's restore, and
// every case the kernel's own path must decide (declined).
#include "arch/x86_64/vmm/signal/frame_builder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace sigvisor::x86 {
namespace {

PtRegs UserRegs() {
  PtRegs regs{};
  regs.rax = 0x1111;
  regs.rcx = 0x2222;
  regs.rdi = 0x3333;
  regs.r15 = 0x4444;
  regs.rip = 0x40001234;
  regs.cs = 0x33;
  regs.ss = 0x2b;
  regs.rflags = 0x202 | 0x100 | 0x400;  // IF, TF, DF
  regs.rsp = 0x7ffe0f13;                // unaligned on purpose
  regs.vector = 0;
  regs.error_code = 0;
  return regs;
}

SignalFrameRequest Request(std::span<const uint8_t> info) {
  return {.signo = 8,
          .handler = 0x40002000,
          .restorer = 0x40003000,
          .action_flags = kSaSiginfo | kSaRestorer,
          .saved_mask = 0x10,
          .fault_address = 0x99,
          .info = info};
}

TEST(FrameBuilderTest, FrameAsTheKernelWritesIt) {
  std::vector<uint8_t> info(48, 0xab);
  absl::StatusOr<SignalFramePlan> plan = PlanSignalFrame(Request(info), UserRegs());
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Below the red zone, 16-byte aligned plus 8 (as after a call).
  const uint64_t sp = ((0x7ffe0f13 - 128 - 440) & ~15ull) - 8;
  EXPECT_EQ(plan->address, sp);
  EXPECT_EQ((plan->address + 8) % 16, 0u);
  const LinuxRtSigframe& f = plan->frame;
  EXPECT_EQ(f.pretcode, 0x40003000u);
  EXPECT_EQ(f.uc.uc_stack.ss_flags, kSsDisable);
  EXPECT_EQ(f.uc.uc_mcontext.rax, 0x1111u);
  EXPECT_EQ(f.uc.uc_mcontext.rip, 0x40001234u);
  EXPECT_EQ(f.uc.uc_mcontext.eflags, 0x702u);
  EXPECT_EQ(f.uc.uc_mcontext.cs, 0x33);
  EXPECT_EQ(f.uc.uc_mcontext.ss, 0x2b);
  EXPECT_EQ(f.uc.uc_mcontext.oldmask, 0x10u);
  EXPECT_EQ(f.uc.uc_mcontext.cr2, 0x99u);
  EXPECT_EQ(f.uc.uc_sigmask, 0x10u);
  EXPECT_EQ(f.info[0], 0xab);
  EXPECT_EQ(f.info[47], 0xab);
  // Written: everything up to the mask but the stack_t's padding and the reserved
  // words, then (right after the mask) the 48 siginfo bytes.
  ASSERT_EQ(plan->written.size(), 3u);
  EXPECT_EQ(plan->written[0].offset, 0u);
  EXPECT_EQ(plan->written[0].length, 8u + 8 + 8 + 8 + 4);  // to ss_flags
  EXPECT_EQ(plan->written[1].offset, 40u);                 // ss_size to fpstate
  EXPECT_EQ(plan->written[1].length, 8u + 192);
  EXPECT_EQ(plan->written[2].offset, 304u);  // uc_sigmask and the siginfo
  EXPECT_EQ(plan->written[2].length, 8u + 48);
  EXPECT_EQ(plan->extent, 360u);
  // The handler's registers.
  EXPECT_EQ(plan->regs.rdi, 8u);
  EXPECT_EQ(plan->regs.rsi, sp + 312);
  EXPECT_EQ(plan->regs.rdx, sp + 8);
  EXPECT_EQ(plan->regs.rax, 0u);
  EXPECT_EQ(plan->regs.rsp, sp);
  EXPECT_EQ(plan->regs.rip, 0x40002000u);
  EXPECT_EQ(plan->regs.rflags, 0x202u);  // TF and DF cleared
  EXPECT_EQ(plan->regs.r15, 0x4444u);    // the rest as they were
}

TEST(FrameBuilderTest, WithoutSiginfoNoSiginfoIsWritten) {
  std::vector<uint8_t> info(48, 0xab);
  SignalFrameRequest request = Request(info);
  request.action_flags = kSaRestorer;
  absl::StatusOr<SignalFramePlan> plan = PlanSignalFrame(request, UserRegs());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->extent, 312u);
  EXPECT_EQ(plan->frame.info[0], 0);
}

TEST(FrameBuilderTest, DeclinesWhatTheKernelMustDecide) {
  std::vector<uint8_t> info(48);
  SignalFrameRequest no_restorer = Request(info);
  no_restorer.action_flags = kSaSiginfo;
  EXPECT_EQ(PlanSignalFrame(no_restorer, UserRegs()).status().message(),
            "an action without SA_RESTORER");
  PtRegs low = UserRegs();
  low.rsp = 0x40000100;  // the frame would start below the user range
  EXPECT_EQ(PlanSignalFrame(Request(info), low).status().message(),
            "a frame outside the user range");
  PtRegs wrapped = UserRegs();
  wrapped.rsp = 16;  // wraps around
  EXPECT_FALSE(PlanSignalFrame(Request(info), wrapped).ok());
  for (int signo : {0, -1, 65}) {
    SignalFrameRequest bad = Request(info);
    bad.signo = signo;
    EXPECT_FALSE(PlanSignalFrame(bad, UserRegs()).ok()) << signo;
  }
  std::vector<uint8_t> long_info(129);
  EXPECT_FALSE(PlanSignalFrame(Request(long_info), UserRegs()).ok());
}

TEST(FrameBuilderTest, SigreturnRestoresAsRestoreSigcontext) {
  PtRegs at_entry{};
  at_entry.rsp = 0x7ffe0000;
  at_entry.rflags = 0x202;
  at_entry.cs = 0x33;
  at_entry.rax = 15;  // the system call number
  ASSERT_EQ(*SigreturnFrameAddress(at_entry), 0x7ffe0000u - 8);
  LinuxUcontext uc{};
  uc.uc_sigmask = 0x80;
  uc.uc_mcontext.rax = 7;
  uc.uc_mcontext.rip = 0x40001000;
  uc.uc_mcontext.rsp = 0x7fff0000;
  uc.uc_mcontext.eflags = 0xffffffff;  // only FIX_EFLAGS come back
  uc.uc_mcontext.cs = 0x8;             // never restored
  const SigreturnPlan plan = PlanSigreturn(at_entry, uc);
  EXPECT_EQ(plan.mask, 0x80u);
  EXPECT_EQ(plan.regs.rax, 7u);
  EXPECT_EQ(plan.regs.rip, 0x40001000u);
  EXPECT_EQ(plan.regs.rsp, 0x7fff0000u);
  EXPECT_EQ(plan.regs.cs, 0x33u);
  EXPECT_EQ(plan.regs.rflags, (0x202ull & ~0x40dd5ull) | 0x40dd5ull);
  PtRegs outside = at_entry;
  outside.rsp = 0x80000000;  // the frame would end past the user range
  EXPECT_FALSE(SigreturnFrameAddress(outside).ok());
}

TEST(FrameBuilderTest, NamesFields) {
  EXPECT_EQ(FrameFieldName(0), "pretcode");
  EXPECT_EQ(FrameFieldName(8 + 40 + 16 * 8), "uc.uc_mcontext.rip");
  EXPECT_EQ(FrameFieldName(8 + 40 + 16 * 8 + 3), "uc.uc_mcontext.rip+3");
  EXPECT_EQ(FrameFieldName(312 + 4), "info+4");
  EXPECT_EQ(PtRegsFieldNames()[0], "r15");
  EXPECT_EQ(PtRegsFieldNames().size(), 22u);
  PtRegs regs{};
  regs.rip = 5;
  EXPECT_EQ(PtRegsField(regs, 17), 5u);
}

}  // namespace
}  // namespace sigvisor::x86
