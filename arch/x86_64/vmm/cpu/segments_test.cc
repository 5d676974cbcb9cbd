#include "arch/x86_64/vmm/cpu/segments.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {
namespace {

// A segment descriptor's fields, read back by the SDM's layout (Vol. 3A, Figure 3-8:
// "Segment Descriptor"), independently of how EncodeDescriptor packs them.
struct DescriptorFields {
  uint32_t limit;  // 20 bits
  uint32_t base;   // 32 bits
  unsigned type, s, dpl, p, avl, l, db, g;
};

DescriptorFields Fields(uint64_t descriptor) {
  const uint32_t low = static_cast<uint32_t>(descriptor);
  const uint32_t high = static_cast<uint32_t>(descriptor >> 32);
  return DescriptorFields{
      .limit = (low & 0xffff) | (high & 0x000f0000),
      .base = (low >> 16) | ((high & 0xff) << 16) | (high & 0xff000000),
      .type = (high >> 8) & 0xf,
      .s = (high >> 12) & 1,
      .dpl = (high >> 13) & 3,
      .p = (high >> 15) & 1,
      .avl = (high >> 20) & 1,
      .l = (high >> 21) & 1,
      .db = (high >> 22) & 1,
      .g = (high >> 23) & 1,
  };
}

TEST(SegmentsTest, FlatSegmentsEncodeAsTheArchitectureLaysThemOut) {
  for (const FlatSegmentKind kind :
       {FlatSegmentKind::kCode64, FlatSegmentKind::kCode32, FlatSegmentKind::kData}) {
    for (const uint8_t dpl : {0, 3}) {
      const kvm_segment segment = FlatSegment(0x10, kind, dpl);
      const DescriptorFields f = Fields(EncodeDescriptor(segment));
      SCOPED_TRACE(testing::Message() << "kind " << static_cast<int>(kind) << " dpl " << +dpl);
      EXPECT_EQ(f.base, 0u);
      EXPECT_EQ(f.limit, 0xfffffu);  // in pages: 4 GiB
      EXPECT_EQ(f.g, 1u);
      EXPECT_EQ(f.s, 1u);
      EXPECT_EQ(f.p, 1u);
      EXPECT_EQ(f.dpl, dpl);
      EXPECT_EQ(f.avl, 0u);
      EXPECT_EQ(f.type & 1, 1u);  // accessed
      EXPECT_EQ((f.type >> 3) & 1, kind == FlatSegmentKind::kData ? 0u : 1u);  // code
      EXPECT_EQ((f.type >> 1) & 1, 1u);  // readable code, writable data
      EXPECT_EQ(f.l, kind == FlatSegmentKind::kCode64 ? 1u : 0u);
      EXPECT_EQ(f.db, kind == FlatSegmentKind::kCode64 ? 0u : 1u);
      // And KVM is told the same.
      EXPECT_EQ(segment.type, f.type);
      EXPECT_EQ(segment.l, f.l);
      EXPECT_EQ(segment.db, f.db);
      EXPECT_EQ(segment.limit, 0xffffffffu);
    }
  }
}

TEST(SegmentsTest, FlatSegmentsAreTheDescriptorsLinuxUses) {
  // Linux's GDT_ENTRY_INIT(0xc09b / 0xa09b / 0xc093 and their DPL 3 forms, 0, 0xfffff).
  EXPECT_EQ(EncodeDescriptor(FlatSegment(0x08, FlatSegmentKind::kCode32)), 0x00cf9b000000ffffull);
  EXPECT_EQ(EncodeDescriptor(FlatSegment(0x10, FlatSegmentKind::kCode64)), 0x00af9b000000ffffull);
  EXPECT_EQ(EncodeDescriptor(FlatSegment(0x18, FlatSegmentKind::kData)), 0x00cf93000000ffffull);
  EXPECT_EQ(EncodeDescriptor(FlatSegment(0x23, FlatSegmentKind::kCode32, 3)),
            0x00cffb000000ffffull);
  EXPECT_EQ(EncodeDescriptor(FlatSegment(0x2b, FlatSegmentKind::kData, 3)),
            0x00cff3000000ffffull);
  EXPECT_EQ(EncodeDescriptor(FlatSegment(0x33, FlatSegmentKind::kCode64, 3)),
            0x00affb000000ffffull);
}

TEST(SegmentsTest, BusyTssSplitsItsBaseOverBothSlots) {
  constexpr uint64_t kBase = 0x1234'5678'9abc'def0ull;
  const kvm_segment tr = BusyTss(0x40, kBase);
  EXPECT_EQ(tr.selector, 0x40);
  EXPECT_EQ(tr.limit, kTssLimit);
  EXPECT_EQ(tr.present, 1);
  EXPECT_EQ(tr.s, 0);  // a system segment

  const DescriptorFields f = Fields(EncodeDescriptor(tr));
  EXPECT_EQ(f.base, 0x9abcdef0u);
  EXPECT_EQ(f.limit, kTssLimit);
  EXPECT_EQ(f.g, 0u);  // a byte-granular limit
  EXPECT_EQ(f.type, 0xbu);  // busy TSS
  EXPECT_EQ(f.s, 0u);
  EXPECT_EQ(f.dpl, 0u);
  EXPECT_EQ(f.p, 1u);
  EXPECT_EQ(f.l | f.db | f.avl, 0u);
  EXPECT_EQ(EncodeSystemDescriptorHigh(tr), 0x12345678u);

  // A TSS below 4 GiB, as every boot state places it: the 0x8b access byte.
  EXPECT_EQ(EncodeDescriptor(BusyTss(0x18, 0x1080)), 0x00008b0010800067ull);
  EXPECT_EQ(EncodeSystemDescriptorHigh(BusyTss(0x18, 0x1080)), 0u);
}

TEST(SegmentsTest, EmptyTssHasNoIoBitmap) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(0x2000);
  ASSERT_TRUE(memory.ok()) << memory.status();
  ASSERT_TRUE(memory->Fill(0, 0xaa, 0x2000).ok());
  ASSERT_TRUE(WriteEmptyTss(*memory, 0x1000).ok());
  for (uint64_t offset = 0; offset < 0x66; ++offset) {
    EXPECT_EQ(*memory->ReadObject<uint8_t>(0x1000 + offset), 0) << "offset " << offset;
  }
  // The I/O map base (offset 102) at the limit + 1: the bitmap lies outside the TSS.
  EXPECT_EQ(*memory->ReadObject<uint16_t>(0x1000 + 0x66), kTssLimit + 1);
  EXPECT_EQ(*memory->ReadObject<uint8_t>(0x1000 + kTssLimit + 1), 0xaa);  // not touched
  EXPECT_FALSE(WriteEmptyTss(*memory, 0x2000 - 0x10).ok());
}

}  // namespace
}  // namespace sigvisor::x86
