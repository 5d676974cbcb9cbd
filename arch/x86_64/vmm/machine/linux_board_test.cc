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
            "--gdb: the gdb stub works on sigvisor images only; not on a Linux kernel");
}

// Issue 30: `run --image bzImage --inject ...` was refused naming the gdb stub.
TEST(LinuxBoardTest, AFaultInjectorIsRefusedNamingInject) {
  const absl::Status refused =
      LinuxBoard::CheckInterceptors(/*trace_only=*/false, /*injects=*/true);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnimplemented);
  const std::string message(refused.message());
  EXPECT_EQ(message.rfind("--inject is for the bundled kernel: fault injection reads sigvisor's "
                          "boot protocol",
                          0),
            0u)
      << message;
  EXPECT_EQ(message.find("gdb"), std::string::npos) << message;
}

}  // namespace
}  // namespace sigvisor::x86
