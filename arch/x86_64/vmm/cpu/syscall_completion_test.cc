// The decision and the entry state of the SYSCALL completion, without a vCPU. The
// interceptor itself runs in tests/linux_guest_test, booting Debian's kernel on a
// host that leaves SYSCALL at CPL3.
#include "arch/x86_64/vmm/cpu/syscall_completion.h"

#include "gtest/gtest.h"

namespace sigvisor::x86 {
namespace {

// Linux x86-64's MSRs: STAR = __USER32_CS (0x23) for SYSRET, __KERNEL_CS (0x10) for
// SYSCALL; SFMASK clears TF, DF, IF, IOPL, AC, NT.
constexpr SyscallMsrs kLinuxMsrs = {
    .star = 0x0023001000000000ull, .lstar = 0xffffffff81a00080ull, .fmask = 0x47700};

// The #PF frame of a SYSCALL left at CPL3: user code fetching LSTAR.
ExceptionFrame StrandedFrame() {
  return {.error_code = 0x15,  // present, user, fetch
          .rip = kLinuxMsrs.lstar,
          .cs = 0x33,
          .rflags = 0x10246,  // RF, IF, ZF, PF
          .rsp = 0x7ffc1230,
          .ss = 0x2b};
}

TEST(SyscallCompletionTest, RecognisesTheFetchFaultAtLstarFromUserMode) {
  EXPECT_TRUE(IsStrandedSyscall(StrandedFrame(), kLinuxMsrs.lstar, kLinuxMsrs));
  ExceptionFrame not_present = StrandedFrame();
  not_present.error_code = 0x14;
  EXPECT_TRUE(IsStrandedSyscall(not_present, kLinuxMsrs.lstar, kLinuxMsrs));
}

TEST(SyscallCompletionTest, LeavesEveryOtherPageFaultToTheKernel) {
  ExceptionFrame kernel_mode = StrandedFrame();
  kernel_mode.cs = 0x10;
  kernel_mode.error_code = 0x11;
  EXPECT_FALSE(IsStrandedSyscall(kernel_mode, kLinuxMsrs.lstar, kLinuxMsrs));

  ExceptionFrame data_read = StrandedFrame();
  data_read.error_code = 0x05;  // a user read of the entry, not a fetch
  EXPECT_FALSE(IsStrandedSyscall(data_read, kLinuxMsrs.lstar, kLinuxMsrs));

  ExceptionFrame write = StrandedFrame();
  write.error_code = 0x17;
  EXPECT_FALSE(IsStrandedSyscall(write, kLinuxMsrs.lstar, kLinuxMsrs));

  ExceptionFrame elsewhere = StrandedFrame();
  elsewhere.rip = 0x401000;  // a demand-paged user fetch
  EXPECT_FALSE(IsStrandedSyscall(elsewhere, 0x401000, kLinuxMsrs));

  // A fault at LSTAR whose CR2 names another page was not the fetch of the entry.
  EXPECT_FALSE(IsStrandedSyscall(StrandedFrame(), kLinuxMsrs.lstar + 0x1000, kLinuxMsrs));

  SyscallMsrs no_syscall = kLinuxMsrs;
  no_syscall.lstar = 0;
  ExceptionFrame at_zero = StrandedFrame();
  at_zero.rip = 0;
  EXPECT_FALSE(IsStrandedSyscall(at_zero, 0, no_syscall));
}

TEST(SyscallCompletionTest, EntersAtLstarAtCplZeroWithSfmaskApplied) {
  kvm_regs regs = {};
  regs.rcx = 0x401234;  // what the host's SYSCALL left: the return address
  regs.r11 = 0x246;     // and the user's RFLAGS
  regs.rsp = 0xfffffe0000001fd8;  // the exception frame on the entry stack
  regs.rip = 0xffffffff81a01000;  // the page-fault entry
  kvm_sregs sregs = {};
  sregs.cs.selector = 0x10;
  EnterSyscall(StrandedFrame(), kLinuxMsrs, regs, sregs);

  EXPECT_EQ(regs.rip, kLinuxMsrs.lstar);
  EXPECT_EQ(regs.rsp, 0x7ffc1230u);            // the user's stack, as SYSCALL keeps it
  EXPECT_EQ(regs.rflags, 0x46u);               // IF and RF cleared, ZF and PF kept
  EXPECT_EQ(regs.rcx, 0x401234u);              // untouched
  EXPECT_EQ(regs.r11, 0x246u);
  EXPECT_EQ(sregs.cs.selector, 0x10);
  EXPECT_EQ(sregs.cs.dpl, 0);
  EXPECT_EQ(sregs.cs.l, 1);
  EXPECT_EQ(sregs.cs.db, 0);
  EXPECT_EQ(sregs.cs.type, 0xb);
  EXPECT_EQ(sregs.ss.selector, 0x18);
  EXPECT_EQ(sregs.ss.dpl, 0);
  EXPECT_EQ(sregs.ss.type, 0x3);
  EXPECT_EQ(sregs.ss.present, 1);
}

TEST(SyscallCompletionTest, SelectorsComeFromStarAsTheSdmSays) {
  SyscallMsrs msrs = kLinuxMsrs;
  msrs.star = 0x0023001300000000ull;  // RPL 3 in the SYSCALL half
  kvm_regs regs = {};
  kvm_sregs sregs = {};
  EnterSyscall(StrandedFrame(), msrs, regs, sregs);
  EXPECT_EQ(sregs.cs.selector, 0x10);  // CS's RPL bits cleared
  EXPECT_EQ(sregs.ss.selector, 0x1b);  // SS: STAR[47:32] + 8, unmasked
}

}  // namespace
}  // namespace sigvisor::x86
