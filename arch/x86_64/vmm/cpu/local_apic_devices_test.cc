// The xAPIC page and the x2APIC MSRs as the bus drives them: access sizes, byte order,
// whose APIC an access reaches, and the names the exit ledger shows.
#include "arch/x86_64/vmm/cpu/local_apic_devices.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor::x86 {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A bus's view: the devices and the vCPU whose thread makes the next access.
struct Machine {
  explicit Machine(int vcpus) : apics(vcpus) {
    for (int vcpu = 0; vcpu < vcpus; ++vcpu) {
      EXPECT_TRUE(apics.Write(vcpu, 0xf0, 0x1ff, /*x2apic=*/false).ok());  // SVR: enabled
    }
  }
  LocalApics apics;
  int caller = 0;
  LocalApicWindow xapic{LocalApicWindow::Kind::kXapicPage, apics, [this] { return caller; }};
  LocalApicWindow x2apic{LocalApicWindow::Kind::kX2apicMsrs, apics, [this] { return caller; }};
};

absl::StatusOr<DeviceAction> Write32(Device& device, uint64_t offset, uint32_t value) {
  std::vector<uint8_t> bytes = {static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                                static_cast<uint8_t>(value >> 16),
                                static_cast<uint8_t>(value >> 24)};
  return device.Write(offset, bytes);
}

absl::StatusOr<DeviceAction> Write64(Device& device, uint64_t offset, uint64_t value) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(value >> (8 * i)));
  return device.Write(offset, bytes);
}

// The access succeeded and the vCPU goes on.
::testing::AssertionResult Continues(const absl::StatusOr<DeviceAction>& action) {
  if (!action.ok()) return ::testing::AssertionFailure() << action.status();
  if (*action != DeviceAction::kContinue) return ::testing::AssertionFailure() << "not kContinue";
  return ::testing::AssertionSuccess();
}

TEST(LocalApicDevicesTest, XapicIcrWritesSendFromTheCallingVcpu) {
  Machine machine(2);
  machine.caller = 1;
  ASSERT_TRUE(Continues(Write32(machine.xapic, 0x310, 0x00000000)));
  ASSERT_TRUE(Continues(Write32(machine.xapic, 0x300, 0x00000041)));
  EXPECT_THAT(machine.apics.Pending(0), ElementsAre(0x41));
  EXPECT_EQ(machine.apics.counts(1).ipis_sent, 1u);

  std::vector<uint8_t> id(4);
  ASSERT_TRUE(Continues(machine.xapic.Read(0x20, id)));
  EXPECT_THAT(id, ElementsAre(0, 0, 0, 1));  // little-endian 0x01000000
}

TEST(LocalApicDevicesTest, XapicRefusesAccessesOtherThanFourBytesAtA16ByteBoundary) {
  Machine machine(2);
  std::vector<uint8_t> two_bytes = {0x41, 0x00};
  absl::StatusOr<DeviceAction> narrow = machine.xapic.Write(0x300, two_bytes);
  EXPECT_EQ(narrow.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(narrow.status().message(),
            "2-byte local APIC access at offset 0x300: its registers take 4-byte accesses at "
            "16-byte aligned offsets");
  std::vector<uint8_t> four_bytes(4);
  EXPECT_EQ(machine.xapic.Read(0x304, four_bytes).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(machine.apics.counts(0).ipis_sent, 0u);
}

TEST(LocalApicDevicesTest, X2apicIcrWriteOfEightBytesSends) {
  Machine machine(2);
  ASSERT_TRUE(Continues(Write64(machine.x2apic, 0x30, (uint64_t{1} << 32) | 0x42)));
  EXPECT_THAT(machine.apics.Pending(1), ElementsAre(0x42));

  std::vector<uint8_t> icr(8);
  ASSERT_TRUE(Continues(machine.x2apic.Read(0x30, icr)));
  EXPECT_THAT(icr, ElementsAre(0x42, 0, 0, 0, 1, 0, 0, 0));

  absl::StatusOr<DeviceAction> narrow = Write32(machine.x2apic, 0x30, 0x42);
  EXPECT_EQ(narrow.status().message(), "4-byte access to x2APIC MSR 0x830: MSRs are 8 bytes");
}

TEST(LocalApicDevicesTest, EoiEndsTheInterruptInServiceThroughEither) {
  Machine machine(1);
  ASSERT_TRUE(machine.apics.Post(0, 0x40));
  machine.apics.Accept(0, 0x40);
  ASSERT_TRUE(Continues(Write32(machine.xapic, 0xb0, 0)));
  EXPECT_THAT(machine.apics.InService(0), IsEmpty());

  ASSERT_TRUE(machine.apics.Post(0, 0x40));
  machine.apics.Accept(0, 0x40);
  ASSERT_TRUE(Continues(Write64(machine.x2apic, 0x0b, 0)));
  EXPECT_THAT(machine.apics.InService(0), IsEmpty());
  EXPECT_EQ(machine.apics.counts(0).eois, 2u);
}

TEST(LocalApicDevicesTest, TheModelsRefusalIsReturnedUnchanged) {
  Machine machine(1);
  absl::StatusOr<DeviceAction> eoi = Write64(machine.x2apic, 0x0b, 1);
  EXPECT_EQ(eoi.status(), machine.apics.Write(0, 0xb0, 1, /*x2apic=*/true));
}

TEST(LocalApicDevicesTest, AccessesAreNamedByTheirRegister) {
  Machine machine(1);
  EXPECT_EQ(machine.xapic.name(), "lapic");
  EXPECT_EQ(machine.xapic.AccessName(0x300), "lapic ICR");
  EXPECT_EQ(machine.xapic.AccessName(0x310), "lapic ICR_HIGH");
  EXPECT_EQ(machine.xapic.AccessName(0xb0), "lapic EOI");
  EXPECT_EQ(machine.xapic.AccessName(0xf0), "lapic SVR");
  EXPECT_EQ(machine.xapic.AccessName(0x20), "lapic ID");
  EXPECT_EQ(machine.xapic.AccessName(0x80), "lapic TPR");
  EXPECT_EQ(machine.xapic.AccessName(0x350), "lapic LVT");
  EXPECT_EQ(machine.xapic.AccessName(0x230), "lapic IRR");
  EXPECT_EQ(machine.xapic.AccessName(0x3f0), "lapic 0x3f0");  // SELF IPI is x2APIC's only
  EXPECT_EQ(machine.xapic.AccessName(0x40), "lapic 0x40");

  EXPECT_EQ(machine.x2apic.name(), "x2apic");
  EXPECT_EQ(machine.x2apic.AccessName(0x30), "x2apic ICR");
  EXPECT_EQ(machine.x2apic.AccessName(0x0b), "x2apic EOI");
  EXPECT_EQ(machine.x2apic.AccessName(0x3f), "x2apic SELF_IPI");
  EXPECT_EQ(machine.x2apic.AccessName(0x31), "x2apic 0x831");  // the ICR is one MSR
  EXPECT_EQ(machine.x2apic.AccessName(0x100), "x2apic 0x900");
}

}  // namespace
}  // namespace sigvisor::x86
