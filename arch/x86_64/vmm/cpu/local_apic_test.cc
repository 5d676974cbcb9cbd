// The local APIC model against the SDM: reset values, priorities, IPIs and their
// kicks, the halt wait, and each refusal's line (the guest's error at the run's end).
#include "arch/x86_64/vmm/cpu/local_apic.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <future>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor::x86 {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr bool kXapic = false;
constexpr bool kX2apic = true;

constexpr uint32_t kId = 0x20;
constexpr uint32_t kTpr = 0x80;
constexpr uint32_t kPpr = 0xa0;
constexpr uint32_t kEoi = 0xb0;
constexpr uint32_t kSvr = 0xf0;
constexpr uint32_t kIcr = 0x300;
constexpr uint32_t kIcrHigh = 0x310;
constexpr uint32_t kLvtTimer = 0x320;
constexpr uint32_t kSelfIpi = 0x3f0;

constexpr uint32_t kSvrSoftwareEnabled = 0x1ff;
constexpr uint32_t kSelfShorthand = 1 << 18;
constexpr uint32_t kAllIncludingSelf = 2 << 18;
constexpr uint32_t kAllExcludingSelf = 3 << 18;

uint64_t ReadOk(LocalApics& apics, int vcpu, uint32_t offset, bool x2apic = kXapic) {
  absl::StatusOr<uint64_t> value = apics.Read(vcpu, offset, x2apic);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.value_or(0xdeadbeef);
}

void WriteOk(LocalApics& apics, int vcpu, uint32_t offset, uint64_t value, bool x2apic = kXapic) {
  absl::Status status = apics.Write(vcpu, offset, value, x2apic);
  EXPECT_TRUE(status.ok()) << status;
}

void EnableAll(LocalApics& apics) {
  for (int vcpu = 0; vcpu < apics.vcpus(); ++vcpu) WriteOk(apics, vcpu, kSvr, kSvrSoftwareEnabled);
}

// Counts each vCPU's kicks (atomic: a wrong kick would come from another thread).
template <int kVcpus>
class CountedKicks {
 public:
  explicit CountedKicks(LocalApics& apics) {
    for (int vcpu = 0; vcpu < kVcpus; ++vcpu)
      apics.SetKick(vcpu, [this, vcpu] { ++counts_[vcpu]; });
  }
  int kicks(int vcpu) const { return counts_[vcpu].load(); }

 private:
  std::array<std::atomic<int>, kVcpus> counts_ = {};
};

// Posts `vector` to `vcpu` and injects it.
void Inject(LocalApics& apics, int vcpu, uint8_t vector) {
  ASSERT_TRUE(apics.Post(vcpu, vector));
  ASSERT_EQ(apics.Deliverable(vcpu), vector);
  apics.Accept(vcpu, vector);
}

TEST(LocalApicsTest, RegistersResetToTheirPowerOnValues) {
  LocalApics apics(2);
  EXPECT_EQ(ReadOk(apics, 1, 0x30), 0x50014u);
  EXPECT_EQ(ReadOk(apics, 1, kTpr), 0u);
  EXPECT_EQ(ReadOk(apics, 1, kPpr), 0u);
  EXPECT_EQ(ReadOk(apics, 1, 0xd0), 0u);
  EXPECT_EQ(ReadOk(apics, 1, 0xe0), 0xffffffffu);
  EXPECT_EQ(ReadOk(apics, 1, kSvr), 0xffu);
  EXPECT_EQ(ReadOk(apics, 1, 0x280), 0u);
  EXPECT_EQ(ReadOk(apics, 1, kIcr), 0u);
  EXPECT_EQ(ReadOk(apics, 1, kIcrHigh), 0u);
  EXPECT_EQ(ReadOk(apics, 1, 0x2f0), 0x10000u);
  for (uint32_t lvt = kLvtTimer; lvt <= 0x370; lvt += 0x10) {
    EXPECT_EQ(ReadOk(apics, 1, lvt), 0x10000u) << lvt;
  }
  for (uint32_t word = 0x100; word <= 0x270; word += 0x10) {
    EXPECT_EQ(ReadOk(apics, 1, word), 0u) << word;
  }
  EXPECT_EQ(ReadOk(apics, 1, 0x380), 0u);
  EXPECT_EQ(ReadOk(apics, 1, 0x390), 0u);
  EXPECT_EQ(ReadOk(apics, 1, 0x3e0), 0u);
}

TEST(LocalApicsTest, AtResetUntilAWriteOrAPostChangesARegister) {
  LocalApics apics(3);
  for (int vcpu = 0; vcpu < 3; ++vcpu) EXPECT_TRUE(apics.AtReset(vcpu)) << vcpu;
  EXPECT_FALSE(apics.AtReset(3));
  ReadOk(apics, 0, kSvr);  // a read changes nothing
  EXPECT_TRUE(apics.AtReset(0));
  WriteOk(apics, 0, kSvr, kSvrSoftwareEnabled);
  EXPECT_FALSE(apics.AtReset(0));
  EXPECT_TRUE(apics.AtReset(1));
  WriteOk(apics, 1, kLvtTimer, 0x10000);  // the value it had
  EXPECT_TRUE(apics.AtReset(1));
  WriteOk(apics, 1, kTpr, 0x10);
  EXPECT_FALSE(apics.AtReset(1));
  WriteOk(apics, 2, kSvr, kSvrSoftwareEnabled);
  WriteOk(apics, 2, kSvr, 0xff);
  EXPECT_TRUE(apics.AtReset(2));
  WriteOk(apics, 2, kSvr, kSvrSoftwareEnabled);
  ASSERT_TRUE(apics.Post(2, 0x40));
  WriteOk(apics, 2, kSvr, 0xff);
  EXPECT_FALSE(apics.AtReset(2));  // 0x40 is still pending
}

TEST(LocalApicsTest, IdIsInTheTopByteForXapicAndWholeForX2apic) {
  LocalApics apics(18);
  EXPECT_EQ(ReadOk(apics, 3, kId, kXapic), 0x03000000u);
  EXPECT_EQ(ReadOk(apics, 3, kId, kX2apic), 3u);
  // x2APIC's logical ID: cluster 1, member bit 1.
  EXPECT_EQ(ReadOk(apics, 17, 0xd0, kX2apic), 0x10002u);
}

TEST(LocalApicsTest, TheCountIsClampedToWhatApicIdsAllow) {
  EXPECT_EQ(LocalApics(0).vcpus(), 1);
  EXPECT_EQ(LocalApics(64).vcpus(), 64);
  EXPECT_EQ(LocalApics(100).vcpus(), 64);
}

TEST(LocalApicsTest, RegisterNamesDependOnTheMode) {
  EXPECT_EQ(LocalApicRegisterName(kIcr, kXapic), "ICR");
  EXPECT_EQ(LocalApicRegisterName(0x250, kXapic), "IRR");
  EXPECT_EQ(LocalApicRegisterName(kIcrHigh, kX2apic), std::nullopt);
  EXPECT_EQ(LocalApicRegisterName(kSelfIpi, kXapic), std::nullopt);
  EXPECT_EQ(LocalApicRegisterName(kSelfIpi, kX2apic), "SELF_IPI");
  EXPECT_EQ(LocalApicRegisterName(0x304, kXapic), std::nullopt);
  EXPECT_EQ(LocalApicRegisterName(0x1000, kXapic), std::nullopt);
}

TEST(LocalApicsTest, TprKeepsItsLowByteAndIsThePprWithNothingInService) {
  LocalApics apics(1);
  WriteOk(apics, 0, kTpr, 0x1234);
  EXPECT_EQ(ReadOk(apics, 0, kTpr), 0x34u);
  EXPECT_EQ(ReadOk(apics, 0, kPpr), 0x34u);
}

TEST(LocalApicsTest, PprTakesTheInServiceClassOnlyWhenItIsAboveTheTprs) {
  LocalApics apics(1);
  EnableAll(apics);
  WriteOk(apics, 0, kTpr, 0x25);
  Inject(apics, 0, 0x41);
  EXPECT_EQ(ReadOk(apics, 0, kPpr), 0x40u);
  WriteOk(apics, 0, kTpr, 0x45);
  EXPECT_EQ(ReadOk(apics, 0, kPpr), 0x45u);
}

TEST(LocalApicsTest, TheHighestVectorIsDeliveredFirstAndALowerClassWaitsForItsEoi) {
  LocalApics apics(1);
  EnableAll(apics);
  ASSERT_TRUE(apics.Post(0, 0x31));
  ASSERT_TRUE(apics.Post(0, 0xfd));
  EXPECT_EQ(apics.Deliverable(0), 0xfd);
  apics.Accept(0, 0xfd);
  EXPECT_EQ(apics.Deliverable(0), std::nullopt);
  EXPECT_THAT(apics.Pending(0), ElementsAre(0x31));
  EXPECT_THAT(apics.InService(0), ElementsAre(0xfd));
  EXPECT_EQ(ReadOk(apics, 0, 0x170), 1u << (0xfd % 32));  // ISR bits 0xe0..0xff
  EXPECT_EQ(ReadOk(apics, 0, 0x210), 1u << (0x31 % 32));  // IRR bits 0x20..0x3f

  WriteOk(apics, 0, kEoi, 0);
  EXPECT_THAT(apics.InService(0), IsEmpty());
  EXPECT_EQ(apics.Deliverable(0), 0x31);
  EXPECT_EQ(apics.counts(0).eois, 1u);
}

TEST(LocalApicsTest, AHigherClassIsDeliveredWhileALowerOneIsInService) {
  LocalApics apics(1);
  EnableAll(apics);
  Inject(apics, 0, 0x31);
  Inject(apics, 0, 0x51);
  EXPECT_THAT(apics.InService(0), ElementsAre(0x31, 0x51));
  // The same class as the one in service waits, even above it within the class.
  ASSERT_TRUE(apics.Post(0, 0x5f));
  EXPECT_EQ(apics.Deliverable(0), std::nullopt);
  // An EOI ends the highest in service.
  WriteOk(apics, 0, kEoi, 0);
  EXPECT_THAT(apics.InService(0), ElementsAre(0x31));
  EXPECT_EQ(apics.Deliverable(0), 0x5f);
}

TEST(LocalApicsTest, TheTprHoldsBackItsClassAndThoseBelow) {
  LocalApics apics(1);
  EnableAll(apics);
  WriteOk(apics, 0, kTpr, 0x50);
  ASSERT_TRUE(apics.Post(0, 0x5e));
  EXPECT_EQ(apics.Deliverable(0), std::nullopt);
  ASSERT_TRUE(apics.Post(0, 0x61));
  EXPECT_EQ(apics.Deliverable(0), 0x61);
}

TEST(LocalApicsTest, AnEoiWithNothingInServiceIsCountedAndChangesNothing) {
  LocalApics apics(1);
  WriteOk(apics, 0, kEoi, 0);
  EXPECT_EQ(apics.counts(0).eois, 1u);
  EXPECT_THAT(apics.InService(0), IsEmpty());
}

TEST(LocalApicsTest, ASoftwareDisabledApicRefusesPostsAndCountsThem) {
  LocalApics apics(1);
  EXPECT_FALSE(apics.Post(0, 0x40));  // disabled from power-on
  EXPECT_EQ(apics.counts(0).blocked, 1u);
  EXPECT_EQ(apics.counts(0).received, 0u);
  EXPECT_THAT(apics.Pending(0), IsEmpty());

  EnableAll(apics);
  EXPECT_TRUE(apics.Post(0, 0x40));
  EXPECT_EQ(apics.counts(0).received, 1u);
  EXPECT_FALSE(apics.Post(0, 0x05));  // a CPU exception's vector
  EXPECT_EQ(apics.counts(0).received, 1u);
}

TEST(LocalApicsTest, DisablingKeepsWhatIsPendingUndeliveredAndMasksTheLvt) {
  LocalApics apics(1);
  EnableAll(apics);
  WriteOk(apics, 0, kLvtTimer, 0x30);
  ASSERT_TRUE(apics.Post(0, 0x40));
  WriteOk(apics, 0, kSvr, 0xff);
  EXPECT_EQ(apics.Deliverable(0), std::nullopt);
  EXPECT_THAT(apics.Pending(0), ElementsAre(0x40));
  EXPECT_EQ(ReadOk(apics, 0, kLvtTimer), 0x10030u);
  WriteOk(apics, 0, kLvtTimer, 0x30);
  EXPECT_EQ(ReadOk(apics, 0, kLvtTimer), 0x10030u);
}

TEST(LocalApicsTest, XapicIcrSendsToItsDestinationAndKicksItOnce) {
  LocalApics apics(4);
  EnableAll(apics);
  CountedKicks<4> counted(apics);
  WriteOk(apics, 0, kIcrHigh, 0x02000000);
  WriteOk(apics, 0, kIcr, 0x40);
  EXPECT_THAT(apics.Pending(2), ElementsAre(0x40));
  EXPECT_EQ(counted.kicks(2), 1);
  EXPECT_EQ(counted.kicks(0) + counted.kicks(1) + counted.kicks(3), 0);
  EXPECT_EQ(apics.counts(0).ipis_sent, 1u);
  EXPECT_EQ(apics.counts(2).received, 1u);
  EXPECT_EQ(ReadOk(apics, 0, kIcr), 0x40u);
  EXPECT_EQ(ReadOk(apics, 0, kIcrHigh), 0x02000000u);
}

TEST(LocalApicsTest, X2apicIcrTakesItsDestinationFromTheHighWord) {
  LocalApics apics(4);
  EnableAll(apics);
  CountedKicks<4> counted(apics);
  WriteOk(apics, 1, kIcr, (uint64_t{3} << 32) | 0x41, kX2apic);
  EXPECT_THAT(apics.Pending(3), ElementsAre(0x41));
  EXPECT_EQ(counted.kicks(3), 1);
  EXPECT_EQ(ReadOk(apics, 1, kIcr, kX2apic), (uint64_t{3} << 32) | 0x41);
}

TEST(LocalApicsTest, ShorthandsChooseTheTargetsAndTheWriterIsNotKicked) {
  LocalApics apics(4);
  EnableAll(apics);
  CountedKicks<4> counted(apics);
  WriteOk(apics, 1, kIcr, kSelfShorthand | 0x41);
  WriteOk(apics, 1, kIcr, kAllIncludingSelf | 0x42);
  WriteOk(apics, 1, kIcr, kAllExcludingSelf | 0x43);
  EXPECT_THAT(apics.Pending(0), ElementsAre(0x42, 0x43));
  EXPECT_THAT(apics.Pending(1), ElementsAre(0x41, 0x42));
  EXPECT_THAT(apics.Pending(2), ElementsAre(0x42, 0x43));
  EXPECT_THAT(apics.Pending(3), ElementsAre(0x42, 0x43));
  EXPECT_EQ(apics.counts(1).ipis_sent, 1u + 4u + 3u);
  EXPECT_EQ(counted.kicks(1), 0);
  EXPECT_EQ(counted.kicks(0), 2);
}

TEST(LocalApicsTest, TheBroadcastDestinationReachesEveryVcpu) {
  LocalApics apics(3);
  EnableAll(apics);
  WriteOk(apics, 0, kIcrHigh, 0xff000000);
  WriteOk(apics, 0, kIcr, 0x50);
  WriteOk(apics, 0, kIcr, (uint64_t{0xffffffff} << 32) | 0x51, kX2apic);
  for (int vcpu = 0; vcpu < 3; ++vcpu) EXPECT_THAT(apics.Pending(vcpu), ElementsAre(0x50, 0x51));
  EXPECT_EQ(apics.counts(0).ipis_sent, 6u);
}

TEST(LocalApicsTest, AnIpiToADisabledApicIsDroppedButCountedAsSent) {
  LocalApics apics(2);
  WriteOk(apics, 0, kSvr, kSvrSoftwareEnabled);
  CountedKicks<2> counted(apics);
  WriteOk(apics, 0, kIcr, (uint64_t{1} << 32) | 0x40, kX2apic);
  EXPECT_THAT(apics.Pending(1), IsEmpty());
  EXPECT_EQ(apics.counts(1).blocked, 1u);
  EXPECT_EQ(apics.counts(0).ipis_sent, 1u);
  EXPECT_EQ(counted.kicks(1), 0);
}

TEST(LocalApicsTest, TheSelfIpiRegisterPostsToTheWriter) {
  LocalApics apics(2);
  EnableAll(apics);
  CountedKicks<2> counted(apics);
  WriteOk(apics, 1, kSelfIpi, 0x4ef, kX2apic);  // only the low byte is the vector
  EXPECT_THAT(apics.Pending(1), ElementsAre(0xef));
  EXPECT_EQ(apics.counts(1).ipis_sent, 1u);
  EXPECT_EQ(counted.kicks(1), 0);
}

struct Refusal {
  std::string what;
  uint32_t offset;
  uint64_t value;
  bool x2apic;
  std::string message;
};

TEST(LocalApicsTest, WritesTheModelRefusesSayWhatTheGuestDid) {
  const Refusal refusals[] = {
      {"INIT IPI", kIcr, 0x500, kXapic, "ICR delivery mode INIT is not modelled (fixed only)"},
      {"logical destination", kIcr, 0x840, kXapic,
       "ICR logical destination mode is not modelled (physical only)"},
      {"vector 5", kIcr, 0x05, kXapic, "illegal ICR vector 5 (0-15 are the CPU's exceptions)"},
      {"destination 9", kIcr, (uint64_t{9} << 32) | 0x40, kX2apic,
       "ICR destination APIC ID 9: no such vCPU"},
      {"self IPI vector 2", kSelfIpi, 0x02, kX2apic,
       "illegal SELF IPI vector 2 (0-15 are the CPU's exceptions)"},
      {"ID", kId, 0x01000000, kXapic,
       "write to the read-only local APIC register ID (offset 0x20)"},
      {"x2APIC LDR", 0xd0, 1, kX2apic, "write to the read-only x2APIC register LDR (MSR 0x80d)"},
      {"unknown", 0x40, 0, kXapic, "no local APIC register at offset 0x40"},
      {"xAPIC SELF IPI", kSelfIpi, 0x40, kXapic, "no local APIC register at offset 0x3f0"},
      {"x2APIC DFR", 0xe0, 0, kX2apic, "no x2APIC register at MSR 0x80e"},
      {"x2APIC ICR high", kIcrHigh, 0, kX2apic, "no x2APIC register at MSR 0x831"},
      {"misaligned", 0x304, 0, kXapic,
       "local APIC access at offset 0x304: registers are 16-byte aligned"},
      {"past the page", 0x1000, 0, kXapic,
       "local APIC access at offset 0x1000 is past its 4 KiB page"},
      {"timer", 0x380, 1000, kXapic,
       "the APIC timer is not modelled (initial count 0x3e8 written)"},
      {"x2APIC EOI", kEoi, 1, kX2apic,
       "write of 0x1 to the x2APIC register EOI (MSR 0x80b), which takes 0"},
      {"x2APIC high bits", kTpr, uint64_t{1} << 32, kX2apic,
       "write of 0x100000000 to the 32-bit x2APIC register TPR (MSR 0x808)"},
  };
  LocalApics apics(4);
  EnableAll(apics);
  for (const Refusal& refusal : refusals) {
    absl::Status status = apics.Write(0, refusal.offset, refusal.value, refusal.x2apic);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << refusal.what;
    EXPECT_EQ(status.message(), refusal.message) << refusal.what;
  }
  // A refused ICR neither sends nor keeps the command.
  EXPECT_EQ(apics.counts(0).ipis_sent, 0u);
  EXPECT_EQ(ReadOk(apics, 0, kIcr), 0u);
  for (int vcpu = 0; vcpu < 4; ++vcpu) EXPECT_THAT(apics.Pending(vcpu), IsEmpty());
}

TEST(LocalApicsTest, ReadsTheModelRefusesSayWhatTheGuestDid) {
  LocalApics apics(1);
  absl::StatusOr<uint64_t> eoi = apics.Read(0, kEoi, kXapic);
  EXPECT_EQ(eoi.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(eoi.status().message(), "read of the write-only local APIC register EOI (offset 0xb0)");
  absl::StatusOr<uint64_t> self_ipi = apics.Read(0, kSelfIpi, kX2apic);
  EXPECT_EQ(self_ipi.status().message(),
            "read of the write-only x2APIC register SELF_IPI (MSR 0x83f)");
  EXPECT_EQ(apics.Read(0, 0x40, kXapic).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(apics.Read(0, 0x301, kXapic).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LocalApicsTest, AWaitEndsWhenAnotherThreadPostsWithoutAKick) {
  LocalApics apics(2);
  EnableAll(apics);
  CountedKicks<2> counted(apics);
  std::promise<void> waiting;
  bool told = false;
  // The first stop() runs once the vCPU counts as waiting, under the lock that the
  // poster's Post then waits for: the post finds it inside its wait.
  auto stop = [&] {
    if (!told) waiting.set_value();
    told = true;
    return false;
  };
  std::thread poster([&] {
    waiting.get_future().wait();
    EXPECT_TRUE(apics.Post(1, 0x40));
  });
  EXPECT_TRUE(apics.WaitForInterrupt(1, stop));
  poster.join();
  EXPECT_EQ(apics.Deliverable(1), 0x40);
  EXPECT_EQ(counted.kicks(1), 0);
}

TEST(LocalApicsTest, AWaitEndsWhenStopBecomesTrueAndTheVcpuIsWoken) {
  LocalApics apics(2);
  EnableAll(apics);
  std::promise<void> waiting;
  bool told = false;
  std::atomic<bool> stopping = false;
  auto stop = [&] {
    if (!told) waiting.set_value();
    told = true;
    return stopping.load();
  };
  std::thread stopper([&] {
    waiting.get_future().wait();
    stopping = true;
    apics.Wake(1);
  });
  EXPECT_FALSE(apics.WaitForInterrupt(1, stop));
  stopper.join();
}

TEST(LocalApicsTest, AWaitWithAnInterruptAlreadyDeliverableReturnsAtOnce) {
  LocalApics apics(1);
  EnableAll(apics);
  ASSERT_TRUE(apics.Post(0, 0x40));
  EXPECT_TRUE(apics.WaitForInterrupt(0, [] { return false; }));
}

TEST(LocalApicsTest, AVcpuOutOfRangeIsRefusedOrIgnoredNeverACrash) {
  LocalApics apics(2);
  for (int vcpu : {-1, 2, 1000}) {
    EXPECT_EQ(apics.Read(vcpu, kTpr, kXapic).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(apics.Write(vcpu, kTpr, 0, kXapic).code(), absl::StatusCode::kInvalidArgument);
    apics.SetKick(vcpu, [] {});
    EXPECT_FALSE(apics.Post(vcpu, 0x40));
    EXPECT_EQ(apics.Deliverable(vcpu), std::nullopt);
    apics.Accept(vcpu, 0x40);
    EXPECT_FALSE(apics.WaitForInterrupt(vcpu, [] { return false; }));
    apics.Wake(vcpu);
    EXPECT_THAT(apics.Pending(vcpu), IsEmpty());
    EXPECT_THAT(apics.InService(vcpu), IsEmpty());
    EXPECT_EQ(apics.counts(vcpu).ipis_sent + apics.counts(vcpu).received + apics.counts(vcpu).eois +
                  apics.counts(vcpu).blocked,
              0u);
  }
}

}  // namespace
}  // namespace sigvisor::x86
