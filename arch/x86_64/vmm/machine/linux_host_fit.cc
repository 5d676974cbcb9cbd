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

// Initcalls that cost minutes where CPL0 is emulated (see LinuxBaseCmdline).
constexpr const char* kLinuxSlowInitcalls[] = {
    "ftrace_check_for_weak_functions", "trace_eval_init",       "cubictcp_register",
    "bpf_rstat_kfunc_init",            "bpf_key_sig_kfuncs_init", "kfunc_init",
    "bpf_prog_test_run_init",          "bpf_tcp_ca_kfunc_init",
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
    // Boot-time work that costs minutes at ~1 us an emulated instruction and that no
    // measured run needs (each measured booting Debian 6.1 here):
    //  - the crypto self-tests, every algorithm once;
    //  - ftrace's sweep of its 40,000 call sites for overridden weak functions (a
    //    kallsyms lookup each, ~300 s; it only keeps ftrace off sites nobody traces);
    //  - the rewrite of every trace event's format with enum values (~150 s, with the
    //    trace event lock held, which blocks later initcalls; the formats then name
    //    enums instead of values, which only tracing tools read);
    //  - the BPF kfunc sets' registrations, the first of which parses the kernel's
    //    whole BTF (~310 s; TCP's cubic, registered the same way, goes with them: reno
    //    stays the default, and nothing here opens a TCP connection);
    //  - the W+X check of every kernel mapping after the kernel write-protects its
    //    read-only data (a page-table walk, more than 400 s): rodata=off leaves text
    //    and read-only data writable, which only a kernel attacked from inside minds.
    absl::StrAppend(&line, " noxsave clearcpuid=", absl::StrJoin(kLinuxFeaturesKept, ","),
                    " cryptomgr.notests rodata=off initcall_blacklist=",
                    absl::StrJoin(kLinuxSlowInitcalls, ","));
  }
  return line;
}

}  // namespace sigvisor::x86
