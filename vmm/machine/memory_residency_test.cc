#include "vmm/machine/memory_residency.h"

#include <sys/mman.h>

#include <cstring>

#include "gtest/gtest.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor {
namespace {

// Two entries as Linux 6.x writes them (fields trimmed); the second is guest RAM
// restored from a snapshot: 61 MiB resident, 12 MiB of it written by the VM.
constexpr char kSmaps[] =
    "55d0c0000000-55d0c0021000 r--p 00000000 fe:01 123  /usr/bin/sigvisor\n"
    "Size:                132 kB\n"
    "Rss:                 132 kB\n"
    "Anonymous:             0 kB\n"
    "7f1200000000-7f120a000000 rw-p 00000000 fe:01 456  /tmp/linux.snap/memory\n"
    "Size:             163840 kB\n"
    "KernelPageSize:        4 kB\n"
    "Rss:               62464 kB\n"
    "Pss:               31232 kB\n"
    "Anonymous:         12288 kB\n"
    "VmFlags: rd wr mr mw me ac\n"
    "7f120a000000-7f120a001000 rw-p 00000000 00:00 0\n"
    "Size:                  4 kB\n"
    "Rss:                   4 kB\n"
    "Anonymous:             4 kB\n";

TEST(MemoryResidencyTest, TheMappingsOwnEntryIsRead) {
  absl::StatusOr<MemoryResidency> r = ParseSmapsResidency(kSmaps, 0x7f1200000000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->mapped_bytes, 163840u * 1024);
  EXPECT_EQ(r->resident_bytes, 62464u * 1024);
  EXPECT_EQ(r->private_bytes, 12288u * 1024);
  EXPECT_EQ(r->shared_bytes(), (62464u - 12288u) * 1024);
}

TEST(MemoryResidencyTest, AMappingThatIsNotThereOrAnEntryWithoutItsFiguresIsAnError) {
  EXPECT_EQ(ParseSmapsResidency(kSmaps, 0x7f1200001000).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ParseSmapsResidency("", 0x1000).status().code(), absl::StatusCode::kNotFound);
  constexpr char kNoAnonymous[] = "1000-2000 rw-p 00000000 00:00 0\nSize: 4 kB\nRss: 4 kB\n";
  EXPECT_EQ(ParseSmapsResidency(kNoAnonymous, 0x1000).status().code(), absl::StatusCode::kDataLoss);
  constexpr char kMoreAnonymousThanResident[] =
      "1000-2000 rw-p 00000000 00:00 0\nSize: 4 kB\nRss: 0 kB\nAnonymous: 4 kB\n";
  EXPECT_EQ(ParseSmapsResidency(kMoreAnonymousThanResident, 0x1000).status().code(),
            absl::StatusCode::kDataLoss);
}

// This process's own guest memory: the pages written are resident and private.
TEST(MemoryResidencyTest, WrittenPagesOfGuestMemoryAreResidentAndPrivate) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(64 << 12);
  ASSERT_TRUE(memory.ok());
  absl::StatusOr<MemoryResidency> before = ReadMemoryResidency(memory->host_base());
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->mapped_bytes, 64u << 12);
  EXPECT_EQ(before->resident_bytes, 0u);
  const uint8_t byte = 1;
  for (uint64_t page = 0; page < 5; ++page) ASSERT_TRUE(memory->Write(page << 12, {&byte, 1}).ok());
  absl::StatusOr<MemoryResidency> after = ReadMemoryResidency(memory->host_base());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->resident_bytes, 5u << 12);
  EXPECT_EQ(after->private_bytes, 5u << 12);
}

}  // namespace
}  // namespace sigvisor
