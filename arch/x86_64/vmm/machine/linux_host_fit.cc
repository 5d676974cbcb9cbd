#include "arch/x86_64/vmm/machine/linux_host_fit.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sigvisor::x86 {
namespace {

constexpr uint32_t kLeaf1EcxCx16 = 1u << 13;
// Linux's CONFIG_HZ on Debian's kernels; lpj is loops per jiffy. A kernel with
// another HZ only calibrates a little wrong: udelay() is longer or shorter, which
// nothing in a measured run depends on.
constexpr uint64_t kDebianHz = 250;
// Linux's feature bits (word * 32 + bit of its capability bitmap) for what this host's
// CPL0 emulator cannot run and CPUID cannot hide: STAC/CLAC (SMAP), POPCNT.
constexpr int kLinuxFeatureSmap = 9 * 32 + 20;
constexpr int kLinuxFeaturePopcnt = 4 * 32 + 23;

}  // namespace

std::vector<kvm_cpuid_entry2> LinuxCpuid(std::span<const kvm_cpuid_entry2> supported,
                                         bool cpl0_emulated) {
  std::vector<kvm_cpuid_entry2> entries(supported.begin(), supported.end());
  if (!cpl0_emulated) return entries;
  for (kvm_cpuid_entry2& e : entries) {
    if (e.function == 1) e.ecx &= ~kLeaf1EcxCx16;
  }
  return entries;
}

std::string LinuxBaseCmdline(bool cpl0_emulated, uint64_t tsc_khz) {
  std::string line = "console=ttyS0 reboot=k panic=-1 quiet tsc=reliable no_timer_check";
  if (tsc_khz != 0) absl::StrAppendFormat(&line, " lpj=%d", tsc_khz * 1000 / kDebianHz);
  if (cpl0_emulated) {
    absl::StrAppendFormat(&line, " noxsave clearcpuid=%d,%d", kLinuxFeatureSmap,
                          kLinuxFeaturePopcnt);
  }
  return line;
}

}  // namespace sigvisor::x86
