#include "arch/x86_64/vmm/machine/mp_table.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kTableGpa = 0xf0000;

// The table as the guest reads it, decoded by offset from the MP spec (not from the
// writer's own definitions).
class MpTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<GuestMemory> memory = GuestMemory::Create(2 << 20);
    ASSERT_TRUE(memory.ok()) << memory.status();
    memory_.emplace(std::move(*memory));
  }

  std::vector<uint8_t> Read(uint64_t gpa, uint64_t len) {
    std::vector<uint8_t> out(len);
    EXPECT_TRUE(memory_->Read(gpa, out).ok());
    return out;
  }
  static uint32_t U32(const std::vector<uint8_t>& b, size_t at) {
    return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | static_cast<uint32_t>(b[at + 3]) << 24;
  }
  static uint16_t U16(const std::vector<uint8_t>& b, size_t at) { return b[at] | b[at + 1] << 8; }
  static uint8_t Sum(const std::vector<uint8_t>& b) {
    uint8_t sum = 0;
    for (uint8_t v : b) sum += v;
    return sum;
  }

  // Checks the floating pointer and header; returns the configuration table.
  std::vector<uint8_t> CheckHeaders(int vcpus, const MpTablePlacement& placement) {
    EXPECT_EQ(placement.gpa, kTableGpa);
    EXPECT_EQ(placement.size, 16u + 44 + 20u * vcpus + 8 * 20);
    const std::vector<uint8_t> mpf = Read(kTableGpa, 16);
    EXPECT_EQ(std::string(mpf.begin(), mpf.begin() + 4), "_MP_");
    EXPECT_EQ(U32(mpf, 4), kTableGpa + 16);
    EXPECT_EQ(mpf[8], 1);   // paragraphs
    EXPECT_EQ(mpf[9], 4);   // spec 1.4
    EXPECT_EQ(mpf[11], 0);  // a configuration table is present
    EXPECT_EQ(mpf[12], 0);  // virtual wire
    EXPECT_EQ(Sum(mpf), 0);

    const std::vector<uint8_t> head = Read(kTableGpa + 16, 44);
    const uint16_t length = U16(head, 4);
    EXPECT_EQ(length, placement.size - 16);
    std::vector<uint8_t> config = Read(kTableGpa + 16, length);
    EXPECT_EQ(std::string(config.begin(), config.begin() + 4), "PCMP");
    EXPECT_EQ(config[6], 4);
    EXPECT_EQ(Sum(config), 0);
    EXPECT_EQ(std::string(config.begin() + 8, config.begin() + 16), "SIGVISOR");
    EXPECT_EQ(U32(config, 28), 0u);  // no OEM table
    EXPECT_EQ(U16(config, 34), vcpus + 1 + 1 + 16 + 2);
    EXPECT_EQ(U32(config, 36), 0xfee00000u);
    EXPECT_EQ(U16(config, 40), 0);  // no extended table
    return config;
  }

  std::optional<GuestMemory> memory_;
};

TEST_F(MpTableTest, FourVcpusDescribesEachCpuTheIoapicAndIsaIrqs) {
  constexpr int kVcpus = 4;
  absl::StatusOr<MpTablePlacement> placement = WriteMpTable(*memory_, kTableGpa, kVcpus);
  ASSERT_TRUE(placement.ok()) << placement.status();
  const std::vector<uint8_t> config = CheckHeaders(kVcpus, *placement);

  size_t at = 44;
  for (int cpu = 0; cpu < kVcpus; ++cpu, at += 20) {
    SCOPED_TRACE(cpu);
    EXPECT_EQ(config[at], 0);  // processor
    EXPECT_EQ(config[at + 1], cpu);
    EXPECT_EQ(config[at + 2], 0x14);
    EXPECT_EQ(config[at + 3], cpu == 0 ? 3 : 1);  // enabled, BSP on vCPU 0
  }
  EXPECT_EQ(config[at], 1);  // bus
  EXPECT_EQ(config[at + 1], 0);
  EXPECT_EQ(std::string(config.begin() + at + 2, config.begin() + at + 8), "ISA   ");
  at += 8;
  EXPECT_EQ(config[at], 2);  // IOAPIC
  EXPECT_EQ(config[at + 1], kVcpus);
  EXPECT_EQ(config[at + 2], 0x11);
  EXPECT_EQ(config[at + 3], 1);
  EXPECT_EQ(U32(config, at + 4), 0xfec00000u);
  at += 8;
  for (int irq = 0; irq < 16; ++irq, at += 8) {
    SCOPED_TRACE(irq);
    EXPECT_EQ(config[at], 3);      // I/O interrupt
    EXPECT_EQ(config[at + 1], 0);  // vectored
    EXPECT_EQ(U16(config, at + 2), 0);
    EXPECT_EQ(config[at + 4], 0);  // ISA
    EXPECT_EQ(config[at + 5], irq);
    EXPECT_EQ(config[at + 6], kVcpus);
    EXPECT_EQ(config[at + 7], irq);
  }
  EXPECT_EQ(config[at], 4);  // ExtINT -> BSP LINT0
  EXPECT_EQ(config[at + 1], 3);
  EXPECT_EQ(config[at + 6], 0);
  EXPECT_EQ(config[at + 7], 0);
  at += 8;
  EXPECT_EQ(config[at], 4);  // NMI -> all LINT1
  EXPECT_EQ(config[at + 1], 1);
  EXPECT_EQ(config[at + 6], 0xff);
  EXPECT_EQ(config[at + 7], 1);
  EXPECT_EQ(at + 8, config.size());
}

TEST_F(MpTableTest, OneVcpuIsTheBootstrapProcessorAndTheIoapicTakesId1) {
  absl::StatusOr<MpTablePlacement> placement = WriteMpTable(*memory_, kTableGpa, 1);
  ASSERT_TRUE(placement.ok()) << placement.status();
  const std::vector<uint8_t> config = CheckHeaders(1, *placement);
  EXPECT_EQ(config[44 + 3], 3);
  EXPECT_EQ(config[44 + 20 + 8], 2);
  EXPECT_EQ(config[44 + 20 + 8 + 1], 1);
}

TEST_F(MpTableTest, MostVcpusFitBelowOneMiB) {
  absl::StatusOr<MpTablePlacement> placement =
      WriteMpTable(*memory_, kTableGpa, kMpTableMaxVcpus);
  ASSERT_TRUE(placement.ok()) << placement.status();
  CheckHeaders(kMpTableMaxVcpus, *placement);
}

TEST_F(MpTableTest, RefusesVcpuCountsApicIdsCannotName) {
  EXPECT_EQ(WriteMpTable(*memory_, kTableGpa, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<MpTablePlacement> many = WriteMpTable(*memory_, kTableGpa, 255);
  EXPECT_EQ(many.status().message(),
            "255 vCPUs: the MP table describes 1 to 254 (8-bit APIC IDs, one for the IOAPIC)");
}

TEST_F(MpTableTest, RefusesAnUnalignedOrHighAddress) {
  EXPECT_EQ(WriteMpTable(*memory_, kTableGpa + 8, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteMpTable(*memory_, 0xfff80, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(MpTableTest, RefusesATableOutsideGuestMemory) {
  absl::StatusOr<GuestMemory> small = GuestMemory::Create(0x1000);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(WriteMpTable(*small, 0xf80, 1).status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace sigvisor::x86
