#include "vmm/snapshot/snapshot_parts.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sigvisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Registers {
  uint64_t rip;
  uint32_t flags;
  uint8_t mode;
  uint8_t pad[3];
};

struct BiggerRegisters {
  uint64_t rip;
  uint64_t rsp;
  uint32_t flags;
  uint32_t pad;
};

TEST(SnapshotPartsTest, RoundTrip) {
  PartWriter out("vcpu0");
  out.PutU8(0xab);
  out.PutU32(0x01020304);
  out.PutU64(0x1122334455667788);
  const std::vector<uint8_t> raw = {9, 8, 7};
  out.PutBytes(raw);
  out.PutString("hello");
  out.PutString("");
  out.PutStruct(Registers{.rip = 0xffffffff81000000, .flags = 0x202, .mode = 3, .pad = {}});
  const SnapshotPart part = std::move(out).Finish();
  EXPECT_EQ(part.name, "vcpu0");

  PartReader in(part);
  EXPECT_EQ(in.GetU8(), 0xab);
  EXPECT_EQ(in.GetU32(), 0x01020304u);
  EXPECT_EQ(in.GetU64(), 0x1122334455667788u);
  EXPECT_THAT(in.GetBytes(3), ElementsAre(9, 8, 7));
  EXPECT_EQ(in.GetString(), "hello");
  EXPECT_EQ(in.GetString(), "");
  const Registers regs = in.GetStruct<Registers>("Registers");
  EXPECT_EQ(regs.rip, 0xffffffff81000000u);
  EXPECT_EQ(regs.flags, 0x202u);
  EXPECT_EQ(regs.mode, 3);
  EXPECT_EQ(in.remaining(), 0u);
  EXPECT_TRUE(in.Done().ok()) << in.Done();
}

TEST(SnapshotPartsTest, IntegersAreLittleEndian) {
  PartWriter out("x");
  out.PutU32(0x01020304);
  out.PutU64(0x0102030405060708);
  out.PutString("ab");
  const SnapshotPart part = std::move(out).Finish();
  EXPECT_THAT(part.bytes, ElementsAre(4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1, 2, 0, 0, 0, 'a', 'b'));
}

TEST(SnapshotPartsTest, StructIsPrefixedWithItsSize) {
  PartWriter out("x");
  out.PutStruct(uint64_t{0x55});
  EXPECT_THAT(std::move(out).Finish().bytes, ElementsAre(8, 0, 0, 0, 0x55, 0, 0, 0, 0, 0, 0, 0));
}

TEST(SnapshotPartsTest, StructOfAnotherSizeIsRefusedNamingBoth) {
  PartWriter out("vcpu0");
  out.PutStruct(Registers{});
  const SnapshotPart part = std::move(out).Finish();
  PartReader in(part);
  const BiggerRegisters regs = in.GetStruct<BiggerRegisters>("kvm_sregs");
  EXPECT_EQ(regs.rip, 0u);
  EXPECT_EQ(in.Done().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(in.Done().message(),
              HasSubstr("part 'vcpu0': kvm_sregs of 16 bytes, this build's is 24"));
}

TEST(SnapshotPartsTest, ReadingPastTheEndIsStickyAndReadsNothing) {
  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6};
  PartReader in("dev", bytes);
  EXPECT_EQ(in.GetU32(), 0x04030201u);
  EXPECT_EQ(in.GetU64(), 0u);  // only 2 bytes left
  EXPECT_FALSE(in.ok());
  EXPECT_EQ(in.offset(), 4u);
  // After the error every read answers zero, even one that would fit.
  EXPECT_EQ(in.GetU8(), 0u);
  EXPECT_TRUE(in.GetBytes(1).empty());
  EXPECT_EQ(in.GetString(), "");
  EXPECT_EQ(in.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(in.Done(), in.status());
  EXPECT_THAT(std::string(in.status().message()),
              HasSubstr("part 'dev' ends at byte 6, in the middle of a u64 (8 bytes at byte 4)"));
  EXPECT_EQ(std::string(in.status().message()).find('\n'), std::string::npos);
}

TEST(SnapshotPartsTest, StringLongerThanThePartIsRefused) {
  PartWriter out("x");
  out.PutU32(1000);
  out.PutBytes(std::vector<uint8_t>(10, 'a'));
  const SnapshotPart part = std::move(out).Finish();
  PartReader in(part);
  EXPECT_EQ(in.GetString(), "");
  EXPECT_THAT(in.Done().message(), HasSubstr("in the middle of a string (1000 bytes at byte 4)"));
}

TEST(SnapshotPartsTest, HugeByteCountIsRefused) {
  const std::vector<uint8_t> bytes(16);
  PartReader in("x", bytes);
  in.GetU8();
  EXPECT_TRUE(in.GetBytes(SIZE_MAX).empty());
  EXPECT_FALSE(in.ok());
}

TEST(SnapshotPartsTest, CountIsRefusedWhenItCannotFit) {
  PartWriter out("memory");
  out.PutU32(3);
  for (int i = 0; i < 3; ++i) out.PutU64(i);
  const SnapshotPart part = std::move(out).Finish();
  {
    PartReader in(part);
    EXPECT_EQ(in.GetCount(8, "runs"), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(in.GetU64(), uint64_t(i));
    EXPECT_TRUE(in.Done().ok());
  }
  {
    PartReader in(part);
    EXPECT_EQ(in.GetCount(9, "runs"), 0u);
    EXPECT_THAT(in.Done().message(),
                HasSubstr("part 'memory': 3 runs of at least 9 bytes each do not fit in its "
                          "last 24 bytes"));
  }
  {
    const std::vector<uint8_t> max = {0xff, 0xff, 0xff, 0xff};
    PartReader in("x", max);
    EXPECT_EQ(in.GetCount(0, "items"), 0u);  // 0 counts as 1 byte each
    EXPECT_FALSE(in.ok());
  }
}

TEST(SnapshotPartsTest, TrailingBytesAreRefused) {
  const std::vector<uint8_t> bytes = {1, 0, 0, 0, 7};
  PartReader in("pic", bytes);
  EXPECT_EQ(in.GetU32(), 1u);
  EXPECT_TRUE(in.ok());
  EXPECT_EQ(in.Done().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(in.Done().message(), HasSubstr("part 'pic' has 1 bytes after its last field (of 5)"));
}

TEST(SnapshotPartsTest, FailKeepsTheFirstError) {
  const std::vector<uint8_t> bytes = {1, 2};
  PartReader in("uart", bytes);
  EXPECT_EQ(in.Fail("divisor 0 is not a divisor").message(),
            "part 'uart': divisor 0 is not a divisor");
  in.Fail("second");
  EXPECT_EQ(in.status().message(), "part 'uart': divisor 0 is not a divisor");
  EXPECT_EQ(in.GetU8(), 0u);
}

TEST(SnapshotPartsTest, EmptyPartIsDone) {
  PartReader in("empty", {});
  EXPECT_TRUE(in.Done().ok());
  EXPECT_EQ(in.GetU8(), 0u);
  EXPECT_FALSE(in.Done().ok());
}

}  // namespace
}  // namespace sigvisor
