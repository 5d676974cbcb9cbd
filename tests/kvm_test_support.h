// Helpers for the tests that boot real guests under KVM.
#ifndef SIGVISOR_TESTS_KVM_TEST_SUPPORT_H_
#define SIGVISOR_TESTS_KVM_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "vmm/app/images/embedded_images.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor::testing {

// Opens /dev/kvm, or skips the test with the reason (only where KVM is absent: on
// this project's machines it is present and these tests run).
#define SIGVISOR_REQUIRE_KVM(kvm_var)                                          \
  absl::StatusOr<::sigvisor::KvmSystem> kvm_var = ::sigvisor::KvmSystem::Open(); \
  if (!kvm_var.ok()) GTEST_SKIP() << "no usable KVM: " << kvm_var.status().message()

// A file from the test's runfiles (paths are relative to the workspace root).
inline std::vector<uint8_t> ReadRunfile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file.good()) << "missing runfile " << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {});
}

// The bundled kernel in build `variant` (a --variant spec; baseline by default).
inline ElfImage BundledKernel(std::string_view variant = "baseline") {
  absl::StatusOr<const KernelVariant*> build = ResolveVariant(variant);
  EXPECT_TRUE(build.ok()) << build.status();
  absl::StatusOr<ElfImage> image = ParseKernel(**build);
  EXPECT_TRUE(image.ok()) << image.status();
  return *std::move(image);
}

inline ElfImage LoadTestGuest(const std::string& name) {
  absl::StatusOr<ElfImage> image = ElfImage::Parse(ReadRunfile("tests/guests/" + name));
  EXPECT_TRUE(image.ok()) << image.status();
  return *std::move(image);
}

}  // namespace sigvisor::testing

#endif  // SIGVISOR_TESTS_KVM_TEST_SUPPORT_H_
