// The Intel MultiProcessor Specification 1.4 table a Linux guest reads to find its
// CPUs, local APICs and IOAPIC when there are no ACPI tables, written the way kvmtool
// (x86/mptable.c) and Firecracker (mptable.rs) write it:
//
//   MP floating pointer ("_MP_", 16 bytes) at `gpa`, pointing at the configuration
//   table ("PCMP") right after it, whose entries are, in this order:
//     one processor per vCPU: local APIC ID i, enabled, vCPU 0 the bootstrap processor
//     one bus: ISA, bus ID 0
//     one IOAPIC: ID = vcpus, version 0x11 (KVM's), usable, at 0xfec00000
//     16 I/O interrupts: ISA IRQ n -> IOAPIC pin n (KVM's default GSI routing)
//     2 local interrupts: ExtINT on the BSP's LINT0, NMI on every LINT1
//   local APICs at 0xfee00000.
//
// Linux finds the floating pointer by scanning the last KiB of base memory and
// 0xf0000-0xfffff, so `gpa` must be 16-byte aligned and in one of those; the caller
// keeps the range reserved in the memory map.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_MP_TABLE_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_MP_TABLE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {

inline constexpr uint32_t kLapicMmioGpa = 0xfee00000;
inline constexpr uint32_t kIoapicMmioGpa = 0xfec00000;
inline constexpr uint8_t kLapicVersion = 0x14;   // what KVM's local APIC reports
inline constexpr uint8_t kIoapicVersion = 0x11;  // what KVM's IOAPIC reports
// xAPIC IDs are 8 bits, 0xff is the broadcast ID and the IOAPIC takes the ID after
// the last CPU's: 254 vCPUs at most.
inline constexpr int kMpTableMaxVcpus = 254;
inline constexpr int kMpIsaIrqs = 16;

// Entry sizes and the table's size for `vcpus` processors.
inline constexpr uint64_t kMpFloatingPointerSize = 16;
inline constexpr uint64_t kMpConfigHeaderSize = 44;
inline constexpr uint64_t kMpProcessorEntrySize = 20;
inline constexpr uint64_t kMpShortEntrySize = 8;  // bus, IOAPIC, I/O and local interrupt
constexpr uint64_t MpTableSize(int vcpus) {
  return kMpFloatingPointerSize + kMpConfigHeaderSize + kMpProcessorEntrySize * vcpus +
         kMpShortEntrySize * (1 + 1 + kMpIsaIrqs + 2);
}

// Where the table went: [gpa, gpa + size).
struct MpTablePlacement {
  uint64_t gpa = 0;
  uint64_t size = 0;
};

// Writes the floating pointer and configuration table at `gpa`. Fails when `vcpus`
// is not in [1, kMpTableMaxVcpus], `gpa` is not 16-byte aligned or below 1 MiB, or
// the table does not fit in guest memory.
absl::StatusOr<MpTablePlacement> WriteMpTable(GuestMemory& memory, uint64_t gpa, int vcpus);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_MP_TABLE_H_
