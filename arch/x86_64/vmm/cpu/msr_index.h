// The model-specific registers of SYSCALL that the VMM reads or sets: the boot states
// set them, the tracer and the SYSCALL completion read them.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_MSR_INDEX_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_MSR_INDEX_H_

#include <cstdint>

namespace sigvisor::x86 {

inline constexpr uint32_t kMsrStar = 0xc0000081;         // SYSCALL/SYSRET selectors
inline constexpr uint32_t kMsrLstar = 0xc0000082;        // SYSCALL's 64-bit entry
inline constexpr uint32_t kMsrSyscallMask = 0xc0000084;  // RFLAGS bits SYSCALL clears
inline constexpr uint32_t kMsrXss = 0xda0;               // XSAVES's supervisor components

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_MSR_INDEX_H_
