#include "arch/x86_64/vmm/probe/kvm_vendor.h"

#include <system_error>

namespace sigvisor {

std::optional<KvmVendorModule> LoadedKvmVendor(const std::filesystem::path& sys_module) {
  static constexpr struct {
    const char* name;
    bool cpl0_emulated;
  } kVendors[] = {{"kvm_pvm", true}, {"kvm_intel", false}, {"kvm_amd", false}};
  std::optional<KvmVendorModule> found;
  for (const auto& vendor : kVendors) {
    std::error_code error;
    if (!std::filesystem::exists(sys_module / vendor.name, error)) continue;
    if (found) return std::nullopt;  // several: which one is /dev/kvm's is not known here
    found = KvmVendorModule{vendor.name, vendor.cpl0_emulated};
  }
  return found;
}

}  // namespace sigvisor
