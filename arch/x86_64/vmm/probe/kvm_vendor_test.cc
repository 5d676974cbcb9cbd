#include "arch/x86_64/vmm/probe/kvm_vendor.h"

#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <string>

#include "gtest/gtest.h"

namespace sigvisor {
namespace {

// A stand-in for /sys/module holding `modules` (and kvm.ko's own entry, always there).
class FakeSysModule {
 public:
  explicit FakeSysModule(std::initializer_list<const char*> modules)
      : root_(std::filesystem::path(::testing::TempDir()) /
              ("sys_module." + std::to_string(getpid()) + "." + std::to_string(next_++))) {
    std::filesystem::create_directories(root_ / "kvm");
    for (const char* module : modules)
      std::filesystem::create_directories(root_ / module / "parameters");
  }
  ~FakeSysModule() {
    std::error_code error;
    std::filesystem::remove_all(root_, error);
  }
  const std::filesystem::path& path() const { return root_; }

 private:
  static inline int next_ = 0;
  std::filesystem::path root_;
};

TEST(KvmVendorTest, PvmEmulatesGuestCpl0) {
  FakeSysModule sys({"kvm_pvm"});
  std::optional<KvmVendorModule> vendor = LoadedKvmVendor(sys.path());
  ASSERT_TRUE(vendor.has_value());
  EXPECT_EQ(vendor->name, "kvm_pvm");
  EXPECT_TRUE(vendor->cpl0_emulated);
}

TEST(KvmVendorTest, VmxAndSvmRunGuestCpl0OnTheCpu) {
  for (const char* name : {"kvm_intel", "kvm_amd"}) {
    FakeSysModule sys({name});
    std::optional<KvmVendorModule> vendor = LoadedKvmVendor(sys.path());
    ASSERT_TRUE(vendor.has_value()) << name;
    EXPECT_EQ(vendor->name, name);
    EXPECT_FALSE(vendor->cpl0_emulated) << name;
  }
}

TEST(KvmVendorTest, NoneOrSeveralIsNoAnswer) {
  FakeSysModule none({});
  EXPECT_FALSE(LoadedKvmVendor(none.path()).has_value());
  // Built-in vendors keep their /sys/module entry even when their init failed.
  FakeSysModule two({"kvm_intel", "kvm_amd"});
  EXPECT_FALSE(LoadedKvmVendor(two.path()).has_value());
  FakeSysModule pvm_and_svm({"kvm_pvm", "kvm_amd"});
  EXPECT_FALSE(LoadedKvmVendor(pvm_and_svm.path()).has_value());
  EXPECT_FALSE(LoadedKvmVendor(none.path() / "absent").has_value());
}

}  // namespace
}  // namespace sigvisor
