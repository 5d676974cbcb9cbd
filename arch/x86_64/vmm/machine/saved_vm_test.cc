#include "arch/x86_64/vmm/machine/saved_vm.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "vmm/snapshot/snapshot_file.h"

namespace sigvisor::x86 {
namespace {

SavedVm Example(const std::string& dir) {
  SavedVm vm;
  vm.dir = dir;
  vm.header = {.sigvisor_version = "sigvisor test",
               .abi_version = 5,
               .arch = "x86_64",
               .host_kind = "hardware",
               .guest_kind = "sigvisor",
               .image = "kernel",
               .variant = "baseline",
               .image_fnv1a64 = 42,
               .memory_bytes = 2ull << 20,
               .vcpus = 1,
               .trap = "off"};
  kvm_cpuid_entry2 leaf = {};
  leaf.function = 1;
  leaf.eax = 0x806f0;
  vm.cpuid = {leaf};
  vm.vcpu.regs.rip = 0x100123;
  vm.vcpu.sregs.cr0 = 0x80050033;
  vm.vcpu.msrs = {{.index = 0x10, .reserved = 0, .data = 12345}};
  vm.devices = {{"serial", {1, 2, 3}}, {"orders", {4, 0, 0, 0}}};
  return vm;
}

TEST(SavedVmTest, WrittenAndReadBack) {
  const std::string dir = ::testing::TempDir() + "/saved_vm_round_trip";
  std::filesystem::remove_all(dir);
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(2 << 20);
  ASSERT_TRUE(memory.ok());
  const uint8_t bytes[] = {0xf4, 0x90};
  ASSERT_TRUE(memory->Write(0x100000, bytes).ok());
  SavedVm vm = Example(dir);
  ASSERT_TRUE(WriteSavedVm(vm, *memory).ok());
  EXPECT_EQ(vm.memory.touched_pages(), 1u);
  EXPECT_EQ(vm.state_bytes, std::filesystem::file_size(dir + "/state"));

  absl::StatusOr<SavedVm> back = ReadSavedVm(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->header.arch, "x86_64");
  EXPECT_EQ(back->header.host_kind, "hardware");
  EXPECT_EQ(back->header.image_fnv1a64, 42u);
  ASSERT_EQ(back->cpuid.size(), 1u);
  EXPECT_EQ(back->cpuid[0].eax, 0x806f0u);
  EXPECT_EQ(back->vcpu.regs.rip, 0x100123u);
  EXPECT_EQ(back->vcpu.sregs.cr0, 0x80050033u);
  ASSERT_EQ(back->vcpu.msrs.size(), 1u);
  EXPECT_EQ(back->vcpu.msrs[0].data, 12345u);
  EXPECT_EQ(back->devices, vm.devices);
  EXPECT_TRUE(CheckSameCpuid(*back, vm.cpuid).ok());
  kvm_cpuid_entry2 other = vm.cpuid[0];
  other.eax ^= 1;
  const absl::Status differs = CheckSameCpuid(*back, std::vector<kvm_cpuid_entry2>{other});
  EXPECT_EQ(differs.code(), absl::StatusCode::kFailedPrecondition);
  // The refusal names what differs.
  EXPECT_NE(differs.message().find("leaf 0x1.0: eax ebx ecx edx 000806f0 00000000 00000000 "
                                   "00000000 saved, 000806f1"),
            std::string::npos)
      << differs;
  EXPECT_NE(CheckSameCpuid(*back, {}).message().find("1 leaves saved, 0 here"), std::string::npos);

  absl::StatusOr<GuestMemory> mapped = MapSavedMemory(*back);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  absl::StatusOr<uint8_t> first = mapped->ReadObject<uint8_t>(0x100000);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 0xf4);
  ASSERT_TRUE(DevicePart(*back, "serial").ok());
  EXPECT_FALSE(DevicePart(*back, "i8042").ok());
}

TEST(SavedVmTest, EveryVcpuIsWrittenAndReadBackInOrder) {
  const std::string dir = ::testing::TempDir() + "/saved_vm_smp";
  std::filesystem::remove_all(dir);
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(2 << 20);
  ASSERT_TRUE(memory.ok());
  SavedVm vm = Example(dir);
  vm.header.vcpus = 3;
  vm.header.ipi = "pv";
  vm.header.lapic = "kvm";
  for (uint64_t rip : {0x1111u, 0x2222u}) {
    VcpuSnapshot ap;
    ap.regs.rip = rip;
    ap.mp_state.mp_state = KVM_MP_STATE_UNINITIALIZED;
    vm.aps.push_back(ap);
  }
  ASSERT_TRUE(WriteSavedVm(vm, *memory).ok());
  absl::StatusOr<SavedVm> back = ReadSavedVm(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->header.vcpus, 3u);
  EXPECT_EQ(back->header.ipi, "pv");
  EXPECT_EQ(back->vcpu.regs.rip, 0x100123u);
  ASSERT_EQ(back->aps.size(), 2u);
  EXPECT_EQ(back->aps[0].regs.rip, 0x1111u);
  EXPECT_EQ(back->aps[1].regs.rip, 0x2222u);
  EXPECT_EQ(back->aps[1].mp_state.mp_state, static_cast<uint32_t>(KVM_MP_STATE_UNINITIALIZED));
  EXPECT_TRUE(back->devices == vm.devices);  // "vcpu1", "vcpu2" are the machine's

  // A VM whose header and vCPU states disagree is not written.
  vm.aps.pop_back();
  EXPECT_EQ(WriteSavedVm(vm, *memory).code(), absl::StatusCode::kInternal);
}

TEST(SavedVmTest, AMissingVcpuPartIsRefusedNamingIt) {
  const std::string dir = ::testing::TempDir() + "/saved_vm_missing_vcpu";
  std::filesystem::remove_all(dir);
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(2 << 20);
  ASSERT_TRUE(memory.ok());
  SavedVm vm = Example(dir);
  ASSERT_TRUE(WriteSavedVm(vm, *memory).ok());
  // The same file with a header that claims a second vCPU: its part is missing.
  absl::StatusOr<std::vector<SnapshotPart>> parts = ReadSnapshotState(dir);
  ASSERT_TRUE(parts.ok());
  vm.header.vcpus = 2;
  for (SnapshotPart& part : *parts) {
    if (part.name == kSnapshotHeaderPart) part = EncodeSnapshotHeader(vm.header);
  }
  ASSERT_TRUE(WriteSnapshotState(dir, *parts).ok());
  const absl::Status refused = ReadSavedVm(dir).status();
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("vcpu1"), std::string::npos) << refused;
}

TEST(SavedVmTest, ABoardPartNamedAsTheMachinesIsRefused) {
  const std::string dir = ::testing::TempDir() + "/saved_vm_clash";
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(2 << 20);
  ASSERT_TRUE(memory.ok());
  SavedVm vm = Example(dir);
  vm.devices.push_back({"vcpu0", {1}});
  EXPECT_FALSE(WriteSavedVm(vm, *memory).ok());
  vm.devices.back().name = "vcpu7";  // any vCPU's name is the machine's
  EXPECT_FALSE(WriteSavedVm(vm, *memory).ok());
  vm.devices.back().name = "vcpu";  // not a vCPU's: a board may use it
  EXPECT_TRUE(WriteSavedVm(vm, *memory).ok());
}

// KVM reports an AMD guest's loaded TR as busy; it goes back as the VMCB held it, and
// only there.
TEST(SavedVmTest, AnAmdGuestsLoadedTrGoesBackAvailable) {
  SavedVm vm;
  kvm_cpuid_entry2 leaf0 = {};
  leaf0.ebx = 0x68747541;  // "Auth"
  vm.cpuid = {leaf0};
  VcpuSnapshot loaded;
  loaded.sregs.tr.selector = 0x40;
  loaded.sregs.tr.type = 11;
  EXPECT_EQ(VcpuToRestore(vm, loaded).sregs.tr.type, 9);
  VcpuSnapshot at_reset = loaded;
  at_reset.sregs.tr.selector = 0;  // never loaded: as KVM made it
  EXPECT_EQ(VcpuToRestore(vm, at_reset).sregs.tr.type, 11);
  vm.cpuid[0].ebx = 0x756e6547;  // "Genu": VMX reports what the guest holds
  EXPECT_EQ(VcpuToRestore(vm, loaded).sregs.tr.type, 11);
}

}  // namespace
}  // namespace sigvisor::x86
