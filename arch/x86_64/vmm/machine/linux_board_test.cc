#include "arch/x86_64/vmm/machine/linux_board.h"

#include <gtest/gtest.h>

#include <string>

namespace sigvisor::x86 {
namespace {

// What `run --image bzImage --trap=...` prints; bench asks the same rule and words it
// in its own flags.
TEST(LinuxBoardTest, ATrapMechanismIsRefusedNamingIt) {
  EXPECT_TRUE(LinuxBoard::CheckTrap(TrapMechanism::kOff).ok());
  for (TrapMechanism trap : {TrapMechanism::kPatch, TrapMechanism::kHwGd, TrapMechanism::kPv}) {
    const absl::Status refused = LinuxBoard::CheckTrap(trap);
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(refused.message(),
              "--trap=" + std::string(TrapMechanismName(trap)) +
                  " is for sigvisor images (64-bit code scanned for trap sites); a Linux kernel "
                  "runs with --trap=off");
  }
}

TEST(LinuxBoardTest, OnlyTheStepTracerFollowsALinuxKernel) {
  EXPECT_TRUE(LinuxBoard::CheckInterceptors(/*trace_only=*/true).ok());
  const absl::Status refused = LinuxBoard::CheckInterceptors(/*trace_only=*/false);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(refused.message(),
            "the gdb stub and fault injection work on sigvisor images only; not on a Linux "
            "kernel");
}

}  // namespace
}  // namespace sigvisor::x86
