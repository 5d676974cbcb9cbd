#include "vmm/snapshot/snapshot_header.h"

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

SnapshotHeader Example() {
  return {.sigvisor_version = "sigvisor 0.2.0 (commit abc)",
          .abi_version = 5,
          .arch = "x86_64",
          .host_kind = "hardware",
          .guest_kind = "sigvisor",
          .image = "kernel",
          .variant = "baseline",
          .image_fnv1a64 = 0x0123456789abcdefull,
          .memory_bytes = 32ull << 20,
          .vcpus = 2,
          .ipi = "xapic",
          .lapic = "vmm",
          .trap = "off",
          .boot_cmdline = "",
          .vm_create_ns = 1000,
          .boot_ns = 2000,
          .created_unix_s = 1765000000};
}

TEST(SnapshotHeaderTest, RoundTrips) {
  const SnapshotHeader header = Example();
  absl::StatusOr<SnapshotHeader> back = DecodeSnapshotHeader(EncodeSnapshotHeader(header));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->sigvisor_version, header.sigvisor_version);
  EXPECT_EQ(back->arch, "x86_64");
  EXPECT_EQ(back->host_kind, "hardware");
  EXPECT_EQ(back->image_fnv1a64, header.image_fnv1a64);
  EXPECT_EQ(back->memory_bytes, header.memory_bytes);
  EXPECT_EQ(back->vcpus, 2u);
  EXPECT_EQ(back->ipi, "xapic");
  EXPECT_EQ(back->lapic, "vmm");
  EXPECT_EQ(back->created_unix_s, header.created_unix_s);
}

TEST(SnapshotHeaderTest, TruncatedAndTrailingPartsAreRefused) {
  SnapshotPart part = EncodeSnapshotHeader(Example());
  part.bytes.push_back(0);
  EXPECT_FALSE(DecodeSnapshotHeader(part).ok());
  part.bytes.resize(part.bytes.size() - 9);
  EXPECT_FALSE(DecodeSnapshotHeader(part).ok());
}

TEST(SnapshotHeaderTest, ARestoreElsewhereIsRefusedNamingBothSides) {
  const SnapshotHeader header = Example();
  EXPECT_TRUE(CheckRestoreHost(header, {5, "x86_64", "hardware"}, "/s").ok());
  const absl::Status kind = CheckRestoreHost(header, {5, "x86_64", "pvm"}, "/s");
  EXPECT_NE(kind.message().find("taken on a hardware host, this one is pvm"), std::string::npos)
      << kind;
  const absl::Status abi = CheckRestoreHost(header, {6, "x86_64", "hardware"}, "/s");
  EXPECT_NE(abi.message().find("ABI 5, this one has ABI 6"), std::string::npos) << abi;
  const absl::Status arch = CheckRestoreHost(header, {5, "mips", "hardware"}, "/s");
  EXPECT_NE(arch.message().find("x86_64"), std::string::npos) << arch;
}

}  // namespace
}  // namespace sigvisor
