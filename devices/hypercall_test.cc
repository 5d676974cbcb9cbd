// The hypercall gates of both platforms: the PC's port block and Malta's MMIO
// window, as a bus device (the run loop hands them accesses itself: vmm/run).
#include "devices/hypercall.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "devices/malta/hypercall_mmio.h"
#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor {
namespace {

struct Calls {
  Calls() {
    for (uint64_t nr : {SIGVISOR_HC_CONSOLE_WRITE, SIGVISOR_HC_EXIT}) {
      EXPECT_TRUE(table
                      .Register(nr,
                                [this, nr](uint32_t gpa) {
                                  seen.push_back({nr, gpa});
                                  HypercallResult result;
                                  if (nr == SIGVISOR_HC_EXIT) {
                                    result.verdict = RunVerdict::kGuestEnded;
                                  }
                                  return result;
                                })
                      .ok());
    }
  }
  HypercallTable table;
  std::vector<std::pair<uint64_t, uint32_t>> seen;
};

TEST(HypercallDeviceTest, PortNIsHypercallN) {
  Calls calls;
  HypercallDevice device(calls.table);
  const uint32_t gpa = 0x1234;
  uint8_t bytes[4];
  std::memcpy(bytes, &gpa, 4);
  EXPECT_EQ(*device.Write(SIGVISOR_HC_CONSOLE_WRITE, bytes), DeviceAction::kContinue);
  EXPECT_EQ(*device.Write(SIGVISOR_HC_EXIT, bytes), DeviceAction::kStop);
  ASSERT_EQ(calls.seen.size(), 2u);
  EXPECT_EQ(calls.seen[0], std::make_pair(uint64_t{SIGVISOR_HC_CONSOLE_WRITE}, gpa));
  EXPECT_EQ(device.AccessName(SIGVISOR_HC_CONSOLE_WRITE), "hypercall console_write");
  EXPECT_EQ(device.AccessName(SIGVISOR_HC_COUNT), "hypercall unknown");
}

TEST(HypercallDeviceTest, ReadsAreAllOnesAndBadCallsAreRefused) {
  Calls calls;
  HypercallDevice device(calls.table);
  uint8_t word[4] = {};
  EXPECT_EQ(*device.Read(SIGVISOR_HC_EXIT, word), DeviceAction::kContinue);
  EXPECT_EQ(word[0], 0xff);
  EXPECT_EQ(word[3], 0xff);
  uint8_t one = 0;
  absl::StatusOr<DeviceAction> narrow = device.Write(SIGVISOR_HC_EXIT, {&one, 1});
  ASSERT_FALSE(narrow.ok());
  EXPECT_EQ(std::string(narrow.status().message()),
            "hypercall 2 (exit): 1-byte write; the ABI takes a 4-byte argument address");
  EXPECT_FALSE(device.Write(SIGVISOR_HC_PANIC, word).ok());  // nobody owns it here
  EXPECT_TRUE(calls.seen.empty());
}

TEST(HypercallMmioWindowTest, TheWordAtFourTimesNIsHypercallN) {
  Calls calls;
  HypercallMmioWindow window(calls.table);
  const uint32_t gpa = 0x3000;
  uint8_t bytes[4];
  std::memcpy(bytes, &gpa, 4);
  EXPECT_EQ(*window.Write(4 * SIGVISOR_HC_EXIT, bytes), DeviceAction::kStop);
  ASSERT_EQ(calls.seen.size(), 1u);
  EXPECT_EQ(calls.seen[0].first, uint64_t{SIGVISOR_HC_EXIT});
  EXPECT_EQ(window.AccessName(4 * SIGVISOR_HC_CONSOLE_WRITE), "hypercall console_write");
  absl::StatusOr<DeviceAction> misaligned = window.Write(4 * SIGVISOR_HC_EXIT + 2, bytes);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_EQ(std::string(misaligned.status().message()),
            "hypercall window: a store at offset 0xa; hypercall NR is the word at 4 * NR");
}

}  // namespace
}  // namespace sigvisor
