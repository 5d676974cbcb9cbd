// Where the VMM puts the x86-64 boot state in guest RAM (below 1 MiB, so it never
// meets a guest image, which must load at or above kImageMinGpa).
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOOT_LAYOUT_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOOT_LAYOUT_H_

#include <cstdint>

#include "guest-kit/abi/sigvisor_abi.h"

namespace sigvisor::x86 {

inline constexpr uint64_t kPml4Gpa = 0x1000;
inline constexpr uint64_t kPdptGpa = 0x2000;
inline constexpr uint64_t kPdGpa = 0x3000;        // maps the first GiB
inline constexpr uint64_t kLowPtGpa = 0x4000;     // 4 KiB pages for the first 2 MiB
inline constexpr uint64_t kBootGdtGpa = 0x5000;
inline constexpr uint64_t kBootTssGpa = 0x6000;
inline constexpr uint64_t kBootInfoGpa = SIGVISOR_BOOT_INFO_GPA;  // 0x7000
// --trap=pv: vCPU 0's paravirtual debug-register page (sigvisor_boot_info.pv_page_gpa).
inline constexpr uint64_t kPvPageGpa = 0x8000;
inline constexpr uint64_t kImageMinGpa = 0x100000;
// The boot page tables map one GiB of identity with 2 MiB pages.
inline constexpr uint64_t kMaxGuestMemory = 1ull << 30;

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOOT_LAYOUT_H_
