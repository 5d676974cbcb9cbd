#include "arch/x86_64/vmm/probe/probe_guest.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "guest-kit/probe/probe_abi.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor::probe {
namespace {

class ProbeGuestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
    if (!kvm.ok()) GTEST_SKIP() << "needs /dev/kvm: " << kvm.status().message();
    kvm_.emplace(std::move(*kvm));
    absl::StatusOr<ProbeGuest> guest = ProbeGuest::Create(*kvm_);
    ASSERT_TRUE(guest.ok()) << guest.status();
    guest_.emplace(std::move(*guest));
  }

  std::optional<KvmSystem> kvm_;
  std::optional<ProbeGuest> guest_;
};

TEST_F(ProbeGuestTest, TimedCaseReachesItsEndMarker) {
  absl::StatusOr<CaseRun> run = guest_->Run(PROBE_CASE_OUT, 10, absl::Seconds(5));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->completed) << run->failure;
  EXPECT_EQ(run->work_outs, 10u);
  EXPECT_GT(run->loop_ns, 0);
}

// The empty loop with 2^62 iterations spins at CPL0 between its BEGIN and END exits
// for longer than anyone will wait: only the watchdog's kick can end KVM_RUN. That
// is a finding about the guest (a failed run), not an error of the probe.
TEST_F(ProbeGuestTest, WatchdogStopsAGuestThatNeverExits) {
  absl::StatusOr<CaseRun> run = guest_->Run(PROBE_CASE_EMPTY, uint64_t{1} << 62,
                                            absl::Milliseconds(50));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_FALSE(run->completed);
  EXPECT_NE(run->failure.find("no END marker within 50ms (watchdog)"), std::string::npos)
      << run->failure;
}

TEST_F(ProbeGuestTest, RejectsAnUnknownCase) {
  EXPECT_EQ(guest_->Run(PROBE_CASE_COUNT, 1, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sigvisor::probe
