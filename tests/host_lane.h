// The two lanes the KVM tests run on (docs/testing.md), and what one of them cannot
// do. `bazel test` runs them on this machine's own /dev/kvm (a PVM host here, where
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
  // The inner guest's hardware breakpoints: TCG's VMRUN loads DR7 without arming
  // DR0-DR3, so neither the VMM's (KVM_SET_GUEST_DEBUG: gdb hbreak, --inject at= and
  // op=) nor the guest's own ever fire.
  kNestedHardwareBreakpoints,
};

// Why this lane cannot run what needs `limit`, or nullopt where it can.
inline std::optional<std::string> LaneLacks(LaneLimit limit) {
  if (!OnHardwareLane()) return std::nullopt;
  switch (limit) {
    case LaneLimit::kDr7GeneralDetect:
      return "hardware lane (QEMU TCG): DR7.GD is not emulated, so debug-register accesses "
             "never raise #DB";
    case LaneLimit::kNestedHardwareBreakpoints:
      return "hardware lane (QEMU TCG): hardware breakpoints of a nested guest never fire "
             "(VMRUN does not arm DR0-DR3)";
  }
  return std::nullopt;
}

}  // namespace sigvisor::testing

// Skips the test where the lane lacks `limit`, with the reason.
#define SIGVISOR_SKIP_IF_LANE_LACKS(limit)                                              \
  if (std::optional<std::string> lane_lacks = ::sigvisor::testing::LaneLacks(limit)) \
  GTEST_SKIP() << *lane_lacks

#endif  // SIGVISOR_TESTS_HOST_LANE_H_
