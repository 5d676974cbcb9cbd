#include "arch/x86_64/vmm/machine/linux_host_fit.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace sigvisor::x86 {
namespace {

constexpr uint32_t kLeaf1EcxCx16 = 1u << 13;
// Linux's CONFIG_HZ on Debian's kernels; lpj is loops per jiffy. A kernel with
// another HZ only calibrates a little wrong: udelay() is longer or shorter, which
// nothing in a measured run depends on.
constexpr uint64_t kDebianHz = 250;
// Linux's feature bits (word * 32 + bit of its capability bitmap, as 6.1's
// clearcpuid= takes them) for what this host's CPL0 emulator cannot run and CPUID
// cannot hide: STAC/CLAC (SMAP), POPCNT, and the SIMD extensions the kernel's own
// crypto and checksum code would use at CPL0 (PCLMULQDQ, SSSE3, SSE4.1, SSE4.2, AES-NI,
// BMI2, ADX, SHA). AVX and its successors go with XSAVE ("noxsave").
constexpr int kLinuxFeaturesKept[] = {
    9 * 32 + 20,  // SMAP
    4 * 32 + 23,  // POPCNT
    4 * 32 + 1,   // PCLMULQDQ
    4 * 32 + 9,   // SSSE3
    4 * 32 + 19,  // SSE4_1
    4 * 32 + 20,  // SSE4_2
    4 * 32 + 25,  // AES
    9 * 32 + 8,   // BMI2
    9 * 32 + 19,  // ADX
    9 * 32 + 29,  // SHA_NI
};

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
    // Two boot-time checks that cost minutes at ~1 us an emulated instruction: the
    // crypto self-tests (every algorithm once), and ftrace's sweep of its 40,000 call
    // sites for overridden weak functions (a kallsyms lookup each, measured at ~300 s
    // of Debian 6.1's boot here; it only keeps ftrace off sites nobody traces here).
    absl::StrAppend(&line, " noxsave clearcpuid=", absl::StrJoin(kLinuxFeaturesKept, ","),
                    " cryptomgr.notests initcall_blacklist=ftrace_check_for_weak_functions");
  }
  return line;
}

}  // namespace sigvisor::x86
