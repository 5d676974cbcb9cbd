// The segments of sigvisor's boot states, made in one place both as KVM takes them
// (kvm_segment) and as the guest's GDT holds them: when the guest reloads a selector,
// the CPU reads the GDT, and it finds what KVM was told only if both came from the
// same values.
#ifndef SIGVISOR_ARCH_X86_64_VMM_CPU_SEGMENTS_H_
#define SIGVISOR_ARCH_X86_64_VMM_CPU_SEGMENTS_H_

#include <linux/kvm.h>

#include <cstdint>

#include "absl/status/status.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {

enum class FlatSegmentKind {
  kCode64,  // long-mode code (L set)
  kCode32,  // 32-bit code (D set)
  kData,    // read/write data, a 32-bit stack when in SS (B set)
};

// A flat segment: base 0, 4 GiB in pages, present. Its type has the accessed bit
// set, as the CPU would set it on the first load, so that KVM's segment cache and the
// GDT never differ by it.
kvm_segment FlatSegment(uint16_t selector, FlatSegmentKind kind, uint8_t dpl = 0);

// Every boot state's TSS is the architecture's minimum, 104 bytes (the 32-bit and the
// 64-bit TSS alike), with no I/O permission bitmap after it.
inline constexpr uint32_t kTssLimit = 0x67;

// TR's value for the TSS at `base`. Busy, because VMX's VM entry refuses a TR that is
// not (type 0xb is the busy TSS in 32-bit and 64-bit mode alike).
kvm_segment BusyTss(uint16_t selector, uint64_t base);

// The 8-byte GDT descriptor of `segment`: a code or data descriptor, or the first
// half of a system descriptor (a TSS).
uint64_t EncodeDescriptor(const kvm_segment& segment);

// In long mode a system descriptor takes two GDT slots; this is the second: bits
// 63..32 of the base.
uint64_t EncodeSystemDescriptorHigh(const kvm_segment& segment);

// A TSS at `gpa` with nothing in it: no stacks (nothing switches stacks before the
// guest installs its own TSS) and the I/O map base past the limit (no bitmap).
absl::Status WriteEmptyTss(GuestMemory& memory, uint64_t gpa);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_CPU_SEGMENTS_H_
