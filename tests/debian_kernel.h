// Debian's kernel for the Linux-guest tests: tools/setup.sh fetches its package into
// the lane cache and tools/unpack_kernel.sh unpacks it there; the hardware lane carries
// it in as $SIGVISOR_LINUX_KERNEL. One place for where the tests find it.
#ifndef SIGVISOR_TESTS_DEBIAN_KERNEL_H_
#define SIGVISOR_TESTS_DEBIAN_KERNEL_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sigvisor::testing {

// Debian's vmlinuz: $SIGVISOR_LINUX_KERNEL, else unpacked-*/vmlinuz in the lane cache
// ($SIGVISOR_LANE_CACHE, default /var/cache/sigvisor/hwkvm); empty when neither exists.
inline std::string DebianKernel() {
  if (const char* path = std::getenv("SIGVISOR_LINUX_KERNEL")) return path;
  const char* cache = std::getenv("SIGVISOR_LANE_CACHE");
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(
           cache != nullptr ? cache : "/var/cache/sigvisor/hwkvm", error)) {
    const std::filesystem::path vmlinuz = entry.path() / "vmlinuz";
    if (entry.path().filename().string().starts_with("unpacked-") &&
        std::filesystem::exists(vmlinuz, error)) {
      return vmlinuz.string();
    }
  }
  return "";
}

}  // namespace sigvisor::testing

// Declares `kernel` (DebianKernel()) or skips the test, saying how to get one.
#define SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel)                                          \
  const std::string kernel = ::sigvisor::testing::DebianKernel();                      \
  if (kernel.empty()) {                                                                 \
    GTEST_SKIP() << "no Debian kernel: run tools/setup.sh (it fetches and unpacks one " \
                    "into /var/cache/sigvisor/hwkvm)";                                  \
  }

#endif  // SIGVISOR_TESTS_DEBIAN_KERNEL_H_
