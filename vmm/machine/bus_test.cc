#include "vmm/machine/bus.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor {
namespace {

using ::testing::HasSubstr;

// Records every access it sees; reads return `read_value` in every byte.
class RecordingDevice : public Device {
 public:
  struct Access {
    bool is_write;
    uint64_t offset;
    std::vector<uint8_t> bytes;
  };

  explicit RecordingDevice(std::string name) : name_(std::move(name)) {}

  std::string_view name() const override { return name_; }

  absl::StatusOr<DeviceAction> Read(uint64_t offset, std::span<uint8_t> data) override {
    for (uint8_t& byte : data) byte = read_value;
    accesses.push_back({false, offset, {data.begin(), data.end()}});
    return DeviceAction::kContinue;
  }
  absl::StatusOr<DeviceAction> Write(uint64_t offset, std::span<const uint8_t> data) override {
    accesses.push_back({true, offset, {data.begin(), data.end()}});
    return write_action;
  }

  uint8_t read_value = 0xab;
  DeviceAction write_action = DeviceAction::kContinue;
  std::vector<Access> accesses;

 private:
  std::string name_;
};

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// MSRs are an address space of their own: the x2APIC's 0x800.. is not MMIO 0x800.
TEST(BusTest, TheMsrSpaceIsSeparateFromTheOthers) {
  Bus bus;
  RecordingDevice x2apic("x2apic");
  ASSERT_TRUE(bus.Register(AddressSpace::kMsr, 0x800, 0x100, &x2apic).ok());
  const uint8_t value[8] = {0xfd};
  ASSERT_TRUE(bus.Write(AddressSpace::kMsr, 0x830, value).ok());
  ASSERT_EQ(x2apic.accesses.size(), 1u);
  EXPECT_EQ(x2apic.accesses[0].offset, 0x30u);
  EXPECT_EQ(x2apic.accesses[0].bytes.size(), 8u);
  absl::StatusOr<DeviceAction> mmio = bus.Write(AddressSpace::kMmio, 0x830, value);
  EXPECT_FALSE(mmio.ok());
  absl::StatusOr<DeviceAction> other = bus.Write(AddressSpace::kMsr, 0x1b, value);
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("MSR 0x1b"));
  EXPECT_EQ(x2apic.accesses.size(), 1u);
}

TEST(BusTest, RoutesAccessesWithOffsetIntoTheRange) {
  Bus bus;
  RecordingDevice serial("serial");
  RecordingDevice exit("debug-exit");
  ASSERT_TRUE(bus.Register(AddressSpace::kPort, 0x3f8, 8, &serial).ok());
  ASSERT_TRUE(bus.Register(AddressSpace::kPort, 0xf4, 4, &exit).ok());

  const uint8_t out[] = {'A'};
  absl::StatusOr<DeviceAction> action = bus.Write(AddressSpace::kPort, 0x3f8, out);
  ASSERT_TRUE(action.ok()) << action.status();
  EXPECT_EQ(*action, DeviceAction::kContinue);

  uint8_t in[2] = {};
  ASSERT_TRUE(bus.Read(AddressSpace::kPort, 0xf6, in).ok());
  EXPECT_EQ(in[0], 0xab);
  EXPECT_EQ(in[1], 0xab);

  ASSERT_EQ(serial.accesses.size(), 1u);
  EXPECT_TRUE(serial.accesses[0].is_write);
  EXPECT_EQ(serial.accesses[0].offset, 0u);
  EXPECT_EQ(serial.accesses[0].bytes, std::vector<uint8_t>{'A'});

  ASSERT_EQ(exit.accesses.size(), 1u);
  EXPECT_FALSE(exit.accesses[0].is_write);
  EXPECT_EQ(exit.accesses[0].offset, 2u);
  EXPECT_EQ(exit.accesses[0].bytes.size(), 2u);
}

TEST(BusTest, PassesTheDevicesActionThrough) {
  Bus bus;
  RecordingDevice exit("debug-exit");
  exit.write_action = DeviceAction::kStop;
  ASSERT_TRUE(bus.Register(AddressSpace::kPort, 0xf4, 4, &exit).ok());
  const uint8_t value[] = {1};
  absl::StatusOr<DeviceAction> action = bus.Write(AddressSpace::kPort, 0xf4, value);
  ASSERT_TRUE(action.ok()) << action.status();
  EXPECT_EQ(*action, DeviceAction::kStop);
}

TEST(BusTest, RefusesOverlapNamingBothDevices) {
  Bus bus;
  RecordingDevice serial("serial");
  RecordingDevice intruder("intruder");
  ASSERT_TRUE(bus.Register(AddressSpace::kPort, 0x3f8, 8, &serial).ok());

  struct Case {
    uint64_t base;
    uint64_t length;
  };
  const Case overlapping[] = {
      {0x3f8, 8},    // identical
      {0x3f0, 9},    // last byte on the first byte of serial
      {0x3ff, 1},    // first byte on the last byte of serial
      {0x3fa, 2},    // inside
      {0x300, 0x200},  // around
  };
  for (const Case& c : overlapping) {
    absl::Status status = bus.Register(AddressSpace::kPort, c.base, c.length, &intruder);
    EXPECT_FALSE(status.ok()) << std::hex << c.base << "+" << c.length;
    EXPECT_THAT(std::string(status.message()), HasSubstr("intruder"));
    EXPECT_THAT(std::string(status.message()), HasSubstr("serial"));
    EXPECT_THAT(std::string(status.message()), HasSubstr("0x3f8"));
  }
  // A refused registration leaves the bus as it was.
  EXPECT_EQ(bus.Find(AddressSpace::kPort, 0x3f8), &serial);
  EXPECT_EQ(bus.Find(AddressSpace::kPort, 0x3f0), nullptr);

  // Adjacent on both sides is fine.
  EXPECT_TRUE(bus.Register(AddressSpace::kPort, 0x3f0, 8, &intruder).ok());
  EXPECT_TRUE(bus.Register(AddressSpace::kPort, 0x400, 1, &intruder).ok());
}

TEST(BusTest, RefusesEmptyOverflowingAndNullRegistrations) {
  Bus bus;
  RecordingDevice device("dev");
  absl::Status empty = bus.Register(AddressSpace::kMmio, 0x1000, 0, &device);
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(empty.message()), HasSubstr("empty"));

  absl::Status overflow = bus.Register(AddressSpace::kMmio, kMax - 0xf, 0x20, &device);
  EXPECT_EQ(overflow.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(overflow.message()), HasSubstr("overflow"));

  EXPECT_EQ(bus.Register(AddressSpace::kMmio, 0, 1, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bus.Find(AddressSpace::kMmio, 0x1000), nullptr);
  EXPECT_EQ(bus.Find(AddressSpace::kMmio, kMax), nullptr);
}

TEST(BusTest, RangeEndingAtTheTopOfTheSpaceIsAllowed) {
  Bus bus;
  RecordingDevice top("top");
  ASSERT_TRUE(bus.Register(AddressSpace::kMmio, kMax - 0xf, 0x10, &top).ok());
  EXPECT_EQ(bus.Find(AddressSpace::kMmio, kMax), &top);
  uint8_t in[8] = {};
  EXPECT_TRUE(bus.Read(AddressSpace::kMmio, kMax - 7, in).ok());
  // One byte further would wrap around to 0.
  EXPECT_EQ(bus.Read(AddressSpace::kMmio, kMax - 6, in).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(BusTest, BoundariesFirstAndLastByteInsideStraddlingRefused) {
  Bus bus;
  RecordingDevice device("dev");
  ASSERT_TRUE(bus.Register(AddressSpace::kMmio, 0x1000, 0x10, &device).ok());

  EXPECT_EQ(bus.Find(AddressSpace::kMmio, 0xfff), nullptr);
  EXPECT_EQ(bus.Find(AddressSpace::kMmio, 0x1000), &device);
  EXPECT_EQ(bus.Find(AddressSpace::kMmio, 0x100f), &device);
  EXPECT_EQ(bus.Find(AddressSpace::kMmio, 0x1010), nullptr);

  uint8_t one[1] = {};
  uint8_t four[4] = {};
  EXPECT_TRUE(bus.Read(AddressSpace::kMmio, 0x1000, one).ok());
  EXPECT_TRUE(bus.Read(AddressSpace::kMmio, 0x100f, one).ok());
  EXPECT_TRUE(bus.Read(AddressSpace::kMmio, 0x100c, four).ok());  // ends on the last byte
  ASSERT_EQ(device.accesses.size(), 3u);
  EXPECT_EQ(device.accesses[1].offset, 0xfu);
  EXPECT_EQ(device.accesses[2].offset, 0xcu);

  // Straddling the end or the start is refused, and the device never sees it.
  absl::StatusOr<DeviceAction> past_end = bus.Read(AddressSpace::kMmio, 0x100d, four);
  EXPECT_EQ(past_end.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(past_end.status().message()), HasSubstr("dev"));
  EXPECT_EQ(bus.Write(AddressSpace::kMmio, 0xffe, std::span<const uint8_t>(four)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(device.accesses.size(), 3u);
}

TEST(BusTest, AddressSpacesAreIndependent) {
  Bus bus;
  RecordingDevice port_device("port-dev");
  RecordingDevice mmio_device("mmio-dev");
  // The same numeric range in both spaces is not an overlap.
  ASSERT_TRUE(bus.Register(AddressSpace::kPort, 0x1000, 0x10, &port_device).ok());
  ASSERT_TRUE(bus.Register(AddressSpace::kMmio, 0x1000, 0x10, &mmio_device).ok());
  EXPECT_EQ(bus.Find(AddressSpace::kPort, 0x1004), &port_device);
  EXPECT_EQ(bus.Find(AddressSpace::kMmio, 0x1004), &mmio_device);

  RecordingDevice mmio_only("mmio-only");
  ASSERT_TRUE(bus.Register(AddressSpace::kMmio, 0x3f8, 8, &mmio_only).ok());
  uint8_t in[1] = {};
  EXPECT_EQ(bus.Read(AddressSpace::kPort, 0x3f8, in).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(mmio_only.accesses.empty());

  const uint8_t out[] = {7};
  ASSERT_TRUE(bus.Write(AddressSpace::kMmio, 0x1004, out).ok());
  EXPECT_TRUE(port_device.accesses.empty());
  EXPECT_EQ(mmio_device.accesses.size(), 1u);
}

TEST(BusTest, UnknownAddressIsNotFoundWithAClearMessage) {
  Bus bus;
  uint8_t one[1] = {};
  absl::StatusOr<DeviceAction> port = bus.Read(AddressSpace::kPort, 0x3f9, one);
  EXPECT_EQ(port.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(port.status().message(), "no device at port 0x3f9 (1 byte)");

  const uint8_t four[4] = {};
  absl::StatusOr<DeviceAction> mmio = bus.Write(AddressSpace::kMmio, 0xfee00000, four);
  EXPECT_EQ(mmio.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(mmio.status().message(), "no device at MMIO 0xfee00000 (4 bytes)");
}

TEST(BusTest, UnclaimedDeviceAnswersWhatNoRangeCoversWithTheAddressAsOffset) {
  Bus bus;
  RecordingDevice serial("serial");
  RecordingDevice unclaimed("unclaimed");
  unclaimed.read_value = 0xff;
  ASSERT_TRUE(bus.Register(AddressSpace::kPort, 0x3f8, 8, &serial).ok());
  bus.SetUnclaimed(AddressSpace::kPort, &unclaimed);

  uint8_t one[1] = {};
  ASSERT_TRUE(bus.Read(AddressSpace::kPort, 0x61, one).ok());
  EXPECT_EQ(one[0], 0xff);
  const uint8_t out[] = {0x42};
  ASSERT_TRUE(bus.Write(AddressSpace::kPort, 0x80, out).ok());
  ASSERT_TRUE(bus.Write(AddressSpace::kPort, 0x3f8, out).ok());  // still the serial's
  ASSERT_EQ(unclaimed.accesses.size(), 2u);
  EXPECT_EQ(unclaimed.accesses[0].offset, 0x61u);
  EXPECT_FALSE(unclaimed.accesses[0].is_write);
  EXPECT_EQ(unclaimed.accesses[1].offset, 0x80u);
  EXPECT_TRUE(unclaimed.accesses[1].is_write);
  EXPECT_EQ(serial.accesses.size(), 1u);

  // Find names only registered devices; the ledger's name comes from the fallback.
  EXPECT_EQ(bus.Find(AddressSpace::kPort, 0x61), nullptr);
  EXPECT_EQ(bus.AccessName(AddressSpace::kPort, 0x61), "unclaimed");
  EXPECT_EQ(bus.AccessName(AddressSpace::kPort, 0x3f8), "serial");

  // An access that runs into a registered range, or past its end, is still refused.
  uint8_t two[2] = {};
  absl::StatusOr<DeviceAction> into = bus.Read(AddressSpace::kPort, 0x3f7, two);
  EXPECT_EQ(into.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(into.status().message()), HasSubstr("serial"));
  EXPECT_EQ(bus.Read(AddressSpace::kPort, 0x3ff, two).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(unclaimed.accesses.size(), 2u);

  // Each space has its own: MMIO is still strict.
  EXPECT_EQ(bus.Read(AddressSpace::kMmio, 0x61, one).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(bus.AccessName(AddressSpace::kMmio, 0x61), "nothing");
  bus.SetUnclaimed(AddressSpace::kMmio, &unclaimed);
  uint8_t eight[8] = {};
  ASSERT_TRUE(bus.Read(AddressSpace::kMmio, kMax - 7, eight).ok());
  EXPECT_EQ(unclaimed.accesses.back().offset, kMax - 7);
}

TEST(BusTest, WithoutAnUnclaimedDeviceTheDefaultStaysStrict) {
  Bus bus;
  RecordingDevice unclaimed("unclaimed");
  bus.SetUnclaimed(AddressSpace::kPort, &unclaimed);
  bus.SetUnclaimed(AddressSpace::kPort, nullptr);
  uint8_t one[1] = {};
  EXPECT_EQ(bus.Read(AddressSpace::kPort, 0x61, one).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(unclaimed.accesses.empty());
}

TEST(BusTest, EmptyAccessIsRefused) {
  Bus bus;
  RecordingDevice device("dev");
  ASSERT_TRUE(bus.Register(AddressSpace::kPort, 0x80, 1, &device).ok());
  EXPECT_EQ(bus.Read(AddressSpace::kPort, 0x80, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(device.accesses.empty());
}

}  // namespace
}  // namespace sigvisor
