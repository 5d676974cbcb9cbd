// The SMP hypercalls against a fake machine: what a guest may ask (and what it gets),
// and every malformed call refused as the guest's error, in one line naming the vCPU.
#include "arch/x86_64/vmm/machine/smp_boot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace sigvisor::x86 {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kArgsGpa = 0x1000;

class FakeMachine : public SmpMachine {
 public:
  int CallingVcpu() const override { return caller; }
  absl::StatusOr<kvm_sregs> CallerSregs() override {
    kvm_sregs sregs = {};
    sregs.cr3 = 0x5000;
    sregs.efer = 0xd01;
    return sregs;
  }
  absl::Status StartAp(int cpu, const ApEntry& entry) override {
    started.emplace_back(cpu, entry);
    return start_status;
  }
  absl::StatusOr<bool> SignalIpi(int cpu, uint32_t vector) override {
    ipis.emplace_back(cpu, vector);
    if (!msi_status.ok()) return msi_status;
    return cpu != blocked_cpu;
  }

  int caller = 0;
  int blocked_cpu = -1;
  absl::Status start_status;
  absl::Status msi_status;
  std::vector<std::pair<int, ApEntry>> started;
  std::vector<std::pair<int, uint32_t>> ipis;
};

class SmpHypercallsTest : public ::testing::Test {
 protected:
  SmpHypercallsTest() : memory_(*GuestMemory::Create(64 << 10)) {}

  HypercallResult CpuUp(sigvisor_hc_cpu_up args) {
    EXPECT_TRUE(memory_.WriteObject(kArgsGpa, args).ok());
    return calls_.CpuUp(kArgsGpa);
  }
  HypercallResult SendIpi(sigvisor_hc_send_ipi args) {
    EXPECT_TRUE(memory_.WriteObject(kArgsGpa, args).ok());
    return calls_.SendIpi(kArgsGpa);
  }
  // A refusal: the guest's error, one line, naming the call, its caller and `what`.
  static void ExpectRefused(const HypercallResult& result, const std::string& what) {
    EXPECT_EQ(result.verdict, RunVerdict::kRunFailed);
    EXPECT_EQ(result.outcome, Outcome::kBadDeviceAccess);
    EXPECT_THAT(result.diagnosis, HasSubstr(what));
    EXPECT_EQ(result.diagnosis.find('\n'), std::string::npos) << result.diagnosis;
  }

  GuestMemory memory_;
  FakeMachine machine_;
  SmpHypercalls calls_{memory_, machine_, 4};
};

TEST_F(SmpHypercallsTest, CpuUpStartsTheApInTheCallersState) {
  const HypercallResult result =
      CpuUp({.cpu = 2, .reserved = 0, .rip = 0xffff800000101000, .rsp = 0x9000, .arg = 7});
  EXPECT_EQ(result.verdict, RunVerdict::kContinue) << result.diagnosis;
  ASSERT_EQ(machine_.started.size(), 1u);
  EXPECT_EQ(machine_.started[0].first, 2);
  const ApEntry& entry = machine_.started[0].second;
  EXPECT_EQ(entry.rip, 0xffff800000101000u);
  EXPECT_EQ(entry.rsp, 0x9000u);
  EXPECT_EQ(entry.rdi, 7u);
  EXPECT_EQ(entry.sregs.cr3, 0x5000u);
  EXPECT_EQ(entry.sregs.efer, 0xd01u);
  EXPECT_EQ(calls_.aps_started(), 1);
}

TEST_F(SmpHypercallsTest, CpuUpRefusals) {
  ExpectRefused(CpuUp({.cpu = 0}),
                "hypercall cpu_up from vCPU 0: cpu 0: the machine has 4 vCPUs, so 1 to 3");
  ExpectRefused(CpuUp({.cpu = 4}), "cpu 4: the machine has 4 vCPUs");
  ExpectRefused(CpuUp({.cpu = 0xffffffff}), "cpu 4294967295");
  ExpectRefused(CpuUp({.cpu = 1, .reserved = 1}), "reserved word 0x1; the ABI wants 0");
  EXPECT_EQ(CpuUp({.cpu = 1}).verdict, RunVerdict::kContinue);
  ExpectRefused(CpuUp({.cpu = 1}), "cpu 1 was started already");
  machine_.caller = 2;
  ExpectRefused(CpuUp({.cpu = 3}), "hypercall cpu_up from vCPU 2: only vCPU 0 makes it");
  machine_.caller = 0;
  ExpectRefused(calls_.CpuUp(64 << 10), "bad argument block at 0x10000");
  EXPECT_EQ(machine_.started.size(), 1u);  // only the one good call
}

TEST_F(SmpHypercallsTest, CpuUpOnOneVcpuIsTheGuestsError) {
  SmpHypercalls one(memory_, machine_, 1);
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, sigvisor_hc_cpu_up{.cpu = 1}).ok());
  ExpectRefused(one.CpuUp(kArgsGpa), "cpu 1: the machine has 1 vCPU, so 1 to 0");
}

TEST_F(SmpHypercallsTest, CpuUpHostFailureIsAHostError) {
  machine_.start_status = absl::InternalError("KVM_SET_SREGS: EINVAL");
  const HypercallResult result = CpuUp({.cpu = 1});
  EXPECT_EQ(result.verdict, RunVerdict::kRunFailed);
  EXPECT_EQ(result.outcome, Outcome::kHostError);
  EXPECT_THAT(result.diagnosis, HasSubstr("KVM_SET_SREGS: EINVAL"));
}

TEST_F(SmpHypercallsTest, SendIpiSignalsEveryCpuOfTheMaskAndCounts) {
  machine_.caller = 3;  // any vCPU may send
  const HypercallResult result = SendIpi({.cpu_mask = 0b1011, .vector = 0xf0});
  EXPECT_EQ(result.verdict, RunVerdict::kContinue) << result.diagnosis;
  const std::vector<std::pair<int, uint32_t>> expected = {{0, 0xf0}, {1, 0xf0}, {3, 0xf0}};
  EXPECT_EQ(machine_.ipis, expected);
  EXPECT_EQ(calls_.ipis_delivered(), 3u);
  EXPECT_EQ(calls_.ipis_delivered(3), 1u);
  EXPECT_EQ(calls_.ipis_delivered(2), 0u);
  EXPECT_EQ(calls_.ipis_delivered(99), 0u);
  machine_.blocked_cpu = 1;
  EXPECT_EQ(SendIpi({.cpu_mask = 0b0010, .vector = SIGVISOR_IPI_VECTOR_MIN}).verdict,
            RunVerdict::kContinue);
  EXPECT_EQ(calls_.ipis_delivered(), 3u);
  EXPECT_EQ(calls_.ipis_blocked(), 1u);
}

TEST_F(SmpHypercallsTest, SendIpiRefusals) {
  machine_.caller = 1;
  ExpectRefused(SendIpi({.cpu_mask = 0, .vector = 0x40}),
                "hypercall send_ipi from vCPU 1: an empty cpu_mask");
  ExpectRefused(SendIpi({.cpu_mask = 0b10001, .vector = 0x40}),
                "cpu_mask 0x11 names vCPU 4; the machine has 4");
  ExpectRefused(SendIpi({.cpu_mask = uint64_t{1} << 63, .vector = 0x40}), "names vCPU 63");
  ExpectRefused(SendIpi({.cpu_mask = 1, .vector = 0x1f}), "vector 0x1f; give 0x20 to 0xff");
  ExpectRefused(SendIpi({.cpu_mask = 1, .vector = 0}), "vector 0");
  ExpectRefused(SendIpi({.cpu_mask = 1, .vector = 0x100}), "vector 0x100");
  ExpectRefused(SendIpi({.cpu_mask = 1, .vector = 0x40, .reserved = 2}), "reserved word 0x2");
  ExpectRefused(calls_.SendIpi(0xfffffff0), "bad argument block at 0xfffffff0");
  EXPECT_TRUE(machine_.ipis.empty());  // nothing sent for a bad call
  SmpHypercalls one(memory_, machine_, 1);
  ASSERT_TRUE(
      memory_.WriteObject(kArgsGpa, sigvisor_hc_send_ipi{.cpu_mask = 1, .vector = 0x40}).ok());
  ExpectRefused(one.SendIpi(kArgsGpa), "the machine has one vCPU");
}

TEST_F(SmpHypercallsTest, SendIpiHostFailureIsAHostError) {
  machine_.msi_status = absl::InternalError("KVM_SIGNAL_MSI: EINVAL");
  const HypercallResult result = SendIpi({.cpu_mask = 1, .vector = 0x40});
  EXPECT_EQ(result.outcome, Outcome::kHostError);
  EXPECT_THAT(result.diagnosis, HasSubstr("KVM_SIGNAL_MSI: EINVAL"));
}

// Through the table, as the gate calls them: registered once, named, and only the
// calls the ABI lets any CPU make are served from an AP.
TEST_F(SmpHypercallsTest, TheTableServesThemAndRefusesVcpu0CallsFromAnAp) {
  HypercallTable table;
  ASSERT_TRUE(calls_.Register(table).ok());
  EXPECT_FALSE(calls_.Register(table).ok());  // one owner per number
  EXPECT_EQ(HypercallName(SIGVISOR_HC_CPU_UP), "cpu_up");
  EXPECT_EQ(HypercallName(SIGVISOR_HC_SEND_IPI), "send_ipi");
  int caller = 2;
  table.set_caller([&caller] { return caller; });
  machine_.caller = 2;
  ASSERT_TRUE(
      memory_.WriteObject(kArgsGpa, sigvisor_hc_send_ipi{.cpu_mask = 1, .vector = 0x40}).ok());
  uint8_t argument[4];
  std::memcpy(argument, &kArgsGpa, 4);
  EXPECT_EQ(table.Call(SIGVISOR_HC_SEND_IPI, argument).verdict, RunVerdict::kContinue);
  ExpectRefused(table.Call(SIGVISOR_HC_CPU_UP, argument),
                "hypercall cpu_up from vCPU 2: only vCPU 0 makes it");
  ASSERT_TRUE(
      table.Register(SIGVISOR_HC_PHASE_BEGIN, [](uint32_t) { return HypercallResult{}; }).ok());
  ExpectRefused(table.Call(SIGVISOR_HC_PHASE_BEGIN, argument),
                "hypercall phase_begin from vCPU 2: only vCPU 0 makes it");
  caller = 0;
  EXPECT_EQ(table.Call(SIGVISOR_HC_PHASE_BEGIN, argument).verdict, RunVerdict::kContinue);
  EXPECT_TRUE(AnyVcpuMayMake(SIGVISOR_HC_CONSOLE_WRITE));
  EXPECT_TRUE(AnyVcpuMayMake(SIGVISOR_HC_EXIT));
  EXPECT_TRUE(AnyVcpuMayMake(SIGVISOR_HC_PANIC));
  EXPECT_TRUE(AnyVcpuMayMake(SIGVISOR_HC_SEND_IPI));
  EXPECT_FALSE(AnyVcpuMayMake(SIGVISOR_HC_CPU_UP));
  EXPECT_FALSE(AnyVcpuMayMake(SIGVISOR_HC_ORDERS));
  EXPECT_FALSE(AnyVcpuMayMake(SIGVISOR_HC_PHASE_END));
}

}  // namespace
}  // namespace sigvisor::x86
