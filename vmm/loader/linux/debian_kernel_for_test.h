// Debian's own kernel, for the tests that read a real one: the lane cache's
// unpacked-*/boot/vmlinuz-* under $SIGVISOR_LANE_CACHE (default
// /var/cache/sigvisor/hwkvm; tools/setup.sh fetches and tools/unpack_kernel.sh unpacks
// it), and its System.map beside it (unpacked-*/System.map) where a real one is there.
#ifndef SIGVISOR_VMM_LOADER_LINUX_DEBIAN_KERNEL_FOR_TEST_H_
#define SIGVISOR_VMM_LOADER_LINUX_DEBIAN_KERNEL_FOR_TEST_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace sigvisor::linux_boot::testing {

struct DebianKernel {
  std::filesystem::path vmlinuz;
  std::filesystem::path system_map;  // empty if there is no real one
};

inline constexpr char kNoDebianKernel[] =
    "no Debian kernel under $SIGVISOR_LANE_CACHE or /var/cache/sigvisor/hwkvm (tools/setup.sh "
    "fetches and unpacks it)";

inline std::optional<DebianKernel> FindDebianKernel() {
  const char* cache = std::getenv("SIGVISOR_LANE_CACHE");
  const std::filesystem::path root = cache != nullptr ? cache : "/var/cache/sigvisor/hwkvm";
  std::error_code error;
  for (const auto& unpacked : std::filesystem::directory_iterator(root, error)) {
    if (unpacked.path().filename().string().rfind("unpacked-", 0) != 0) continue;
    for (const auto& file : std::filesystem::directory_iterator(unpacked.path() / "boot", error)) {
      if (file.path().filename().string().rfind("vmlinuz-", 0) != 0) continue;
      DebianKernel kernel{.vmlinuz = file.path()};
      // Debian's image package has a one-line placeholder; a real map has a line per symbol.
      std::ifstream map(unpacked.path() / "System.map");
      int lines = 0;
      for (std::string line; lines < 2 && std::getline(map, line);) ++lines;
      if (lines >= 2) kernel.system_map = unpacked.path() / "System.map";
      return kernel;
    }
  }
  return std::nullopt;
}

}  // namespace sigvisor::linux_boot::testing

#endif  // SIGVISOR_VMM_LOADER_LINUX_DEBIAN_KERNEL_FOR_TEST_H_
