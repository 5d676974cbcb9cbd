// The two lanes the KVM tests run on (docs/testing.md), and what one of them cannot
// do (each limit below was seen there, and read in QEMU's TCG). `bazel test` runs them on this machine's own /dev/kvm (a PVM host here, where
// guest CPL0 is emulated); tests/hwkvm/lane.sh runs the same binaries again on
// hardware-style KVM inside QEMU's TCG, and says so in SIGVISOR_TEST_LANE. TCG does not
// emulate everything AMD hardware does: a test that needs one of those things skips on
// that lane with the reason, and runs on the other.
//
// What differs by host kind rather than by lane (kernel instructions are counted only
// where CPL0 is emulated, `int3` at CPL0 is an emulation failure only on PVM, ...) is
// asked of the host itself: HostKindOf() below, or the run's JSON `host.kind`.
#ifndef SIGVISOR_TESTS_HOST_LANE_H_
#define SIGVISOR_TESTS_HOST_LANE_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace sigvisor::testing {

// The lane's name as tests/hwkvm/init sets it.
inline constexpr std::string_view kHardwareLane = "hwkvm-tcg";

inline bool OnHardwareLane() {
  const char* lane = std::getenv("SIGVISOR_TEST_LANE");
  return lane != nullptr && std::string_view(lane) == kHardwareLane;
}

enum class LaneLimit {
  // DR7.GD: TCG never raises the #DB for a debug-register access (--trap=hw-gd, the
  // guest's GD self-trap).
  kDr7GeneralDetect,
  // Hardware breakpoints that KVM loads: TCG arms DR0-DR3 only when the guest writes
  // DR7 itself; the DR7 that VMRUN loads arms nothing. So the VMM's breakpoints
  // (KVM_SET_GUEST_DEBUG: gdb hbreak, --inject at=, op= and random) never fire, nor
  // the guest's own where the trap engine emulated its DR7 write (--trap=patch).
  kNestedHardwareBreakpoints,
  // Software breakpoints: TCG checks `int3` against the software-interrupt intercept,
  // not the #BP exception intercept, so KVM_GUESTDBG_USE_SW_BP never exits and the
  // int3 reaches the guest (gdb break).
  kSoftwareBreakpointExits,
};

// Why this lane cannot run what needs `limit`, or nullopt where it can.
inline std::optional<std::string> LaneLacks(LaneLimit limit) {
  if (!OnHardwareLane()) return std::nullopt;
  switch (limit) {
    case LaneLimit::kDr7GeneralDetect:
      return "hardware lane (QEMU TCG): DR7.GD is not emulated, so debug-register accesses "
             "never raise #DB";
    case LaneLimit::kNestedHardwareBreakpoints:
      return "hardware lane (QEMU TCG): hardware breakpoints KVM loads into a nested guest "
             "never fire (VMRUN does not arm DR0-DR3)";
    case LaneLimit::kSoftwareBreakpointExits:
      return "hardware lane (QEMU TCG): int3 in a nested guest never raises the #BP "
             "intercept, so KVM's software breakpoints do not exit";
  }
  return std::nullopt;
}

}  // namespace sigvisor::testing

// Skips the test where the lane lacks `limit`, with the reason.
#define SIGVISOR_SKIP_IF_LANE_LACKS(limit)                                              \
  if (std::optional<std::string> lane_lacks = ::sigvisor::testing::LaneLacks(limit)) \
  GTEST_SKIP() << *lane_lacks

#endif  // SIGVISOR_TESTS_HOST_LANE_H_
