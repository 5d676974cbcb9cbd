// What a stock Linux kernel gets changed so that it runs on this host kind, in one
// place: the CPUID it is given and what sigvisor adds to its command line.
//
// Where the host emulates guest CPL0 (PVM), KVM's instruction emulator cannot run a
// few instructions that Linux uses at CPL0 when the CPU offers them. Hiding a feature
// in CPUID is the clean way, and it works for CMPXCHG16B. But this host ORs its own
// CPU's features into the leaves user mode can see natively (leaf 1 ECX, leaf 7 EBX:
// measured, docs/host-notes.md), so XSAVE and SMAP stay visible whatever the VMM sets;
// for those the kernel's own switches turn the feature off ("noxsave", and
// "clearcpuid=" with the feature's bit number, as Linux 6.1 takes it). Each was found
// booting Debian's 6.1 kernel here, one emulation failure at a time.
//
// What remains and the VMM can complete exactly, it completes (int3 at CPL0:
// arch/x86_64/vmm/cpu/cpl0_completion.h).
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_HOST_FIT_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_HOST_FIT_H_

#include <linux/kvm.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sigvisor::x86 {

// `supported` (KVM_GET_SUPPORTED_CPUID) as a Linux guest gets it: where CPL0 is
// emulated, without CMPXCHG16B (SLUB's `lock cmpxchg16b` is an emulation failure).
std::vector<kvm_cpuid_entry2> LinuxCpuid(std::span<const kvm_cpuid_entry2> supported,
                                         bool cpl0_emulated);

// The kernel command line sigvisor gives a Linux guest, before the caller's words
// (which come last, so that a user's parameter wins over sigvisor's):
//   console=ttyS0     the console on COM1, the 16550 sigvisor has
//   reboot=k panic=-1 a panic resets through the i8042 at once: the run ends as a
//                     reboot instead of waiting for the watchdog
//   quiet             printk below warnings stays in the log buffer: every console byte
//                     is a VM exit, and where CPL0 is emulated the kernel's own
//                     formatting costs about 1 us an instruction
//   lpj=N tsc=reliable no_timer_check
//                     the delay loop's calibration and the timer checks skipped: they
//                     wait on ticks, which emulated CPL0 makes last seconds. N from
//                     the guest TSC's rate (`tsc_khz`, 0 where unknown: then omitted)
// and, where CPL0 is emulated, "noxsave clearcpuid=..." for what CPUID cannot hide
// (STAC/CLAC, POPCNT and the SIMD extensions are emulation failures there; the list
// is in linux_host_fit.cc), and boot-time work skipped that costs minutes there and no
// measured run needs: "cryptomgr.notests rodata=off initcall_blacklist=..." (the list
// and why each, in linux_host_fit.cc).
std::string LinuxBaseCmdline(bool cpl0_emulated, uint64_t tsc_khz);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_HOST_FIT_H_
