#include "arch/x86_64/vmm/machine/saved_vm.h"

#include <filesystem>

#include "gtest/gtest.h"

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
  EXPECT_FALSE(CheckSameCpuid(*back, std::vector<kvm_cpuid_entry2>{other}).ok());

  absl::StatusOr<GuestMemory> mapped = MapSavedMemory(*back);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  absl::StatusOr<uint8_t> first = mapped->ReadObject<uint8_t>(0x100000);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 0xf4);
  ASSERT_TRUE(DevicePart(*back, "serial").ok());
  EXPECT_FALSE(DevicePart(*back, "i8042").ok());
}

TEST(SavedVmTest, ABoardPartNamedAsTheMachinesIsRefused) {
  const std::string dir = ::testing::TempDir() + "/saved_vm_clash";
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(2 << 20);
  ASSERT_TRUE(memory.ok());
  SavedVm vm = Example(dir);
  vm.devices.push_back({"vcpu0", {1}});
  EXPECT_FALSE(WriteSavedVm(vm, *memory).ok());
}

}  // namespace
}  // namespace sigvisor::x86
