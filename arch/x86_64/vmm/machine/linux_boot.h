// The boot state a stock x86-64 Linux kernel gets from sigvisor, as kvmtool and
// Firecracker give it, in one of two forms:
//
//  - the 64-bit boot protocol (Documentation/arch/x86/boot.rst), for the kernel of a
//    bzImage decompressed on the host or an ELF vmlinux: the vCPU in long mode with
//    paging on and the first 4 GiB identity-mapped, CS = __BOOT_CS (0x10, flat 64-bit
//    code), DS/ES/SS/FS/GS = __BOOT_DS (0x18, flat data), interrupts off, rsi = the
//    boot_params ("zero page") with the setup header, an e820 map, the command line
//    and the initrd, rip = the kernel's 64-bit entry (startup_64) by physical address.
//  - the PVH entry (Xen's hvm_start_info ABI, used by QEMU and Firecracker), for an
//    ELF vmlinux with a XEN_ELFNOTE_PHYS32_ENTRY note: 32-bit protected mode, paging
//    off, flat CS/DS, ebx = the hvm_start_info with the command line, the initrd as
//    module 0 and the memory map.
//
// Either way the guest finds its CPUs and IOAPIC in an MP table (mp_table.h) and no
// ACPI tables.
//
// Guest-physical layout below 1 MiB (the kernel loads at 1 MiB or above, Debian's at
// 16 MiB; the initrd goes as high as it may, above the kernel):
//   0x00500  GDT: 0x08 flat code32 (PVH), 0x10 code64, 0x18 data, 0x20 busy TSS (16 B)
//   0x00580  the TSS the GDT's descriptor and TR point at (104 bytes, zero)
//   0x06000  hvm_start_info (PVH), 0x06040 its module list, 0x06080 its memory map
//   0x07000  boot_params, the zero page (4 KiB)
//   0x08000-0x08fff  the boot stack (rsp = 0x8ff0, the 64-bit entry only)
//   0x09000  PML4, 0x0a000 PDPT, 0x0b000-0x0efff four PDs: 4 GiB of 2 MiB pages
//   0x20000-0x2ffff  the command line (NUL-terminated)
//   0x9fc00-0x9ffff  reserved in the memory map (a PC's EBDA)
//   0xf0000-0xfffff  reserved in the memory map (a PC's BIOS): the MP table
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOOT_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOOT_H_

#include <linux/kvm.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {

inline constexpr uint64_t kLinuxGdtGpa = 0x500;
inline constexpr uint64_t kLinuxTssGpa = 0x580;
inline constexpr uint64_t kLinuxPvhStartInfoGpa = 0x6000;
inline constexpr uint64_t kLinuxPvhModlistGpa = 0x6040;
inline constexpr uint64_t kLinuxPvhMemmapGpa = 0x6080;
inline constexpr uint64_t kLinuxBootParamsGpa = 0x7000;
inline constexpr uint64_t kLinuxBootStackTop = 0x8ff0;
inline constexpr uint64_t kLinuxPml4Gpa = 0x9000;
inline constexpr uint64_t kLinuxPdptGpa = 0xa000;
inline constexpr uint64_t kLinuxPdGpa = 0xb000;  // four pages, one per GiB
inline constexpr uint64_t kLinuxCmdlineGpa = 0x20000;
inline constexpr uint64_t kLinuxCmdlineEnd = 0x30000;
inline constexpr uint64_t kLinuxEbdaGpa = 0x9fc00;
inline constexpr uint64_t kLinuxVgaHoleGpa = 0xa0000;
inline constexpr uint64_t kLinuxMpTableGpa = 0xf0000;
inline constexpr uint64_t kLinuxHighMemoryGpa = 0x100000;  // 1 MiB: kernels load here or above
// Guest RAM is one range from 0, so it must end below the 32-bit MMIO hole (the
// IOAPIC at 0xfec00000, the local APICs at 0xfee00000, PCI windows below them).
inline constexpr uint64_t kLinuxMaxMemory = 3ull << 30;

// GDT selectors: what boot.rst requires of the 64-bit entry (__BOOT_CS, __BOOT_DS),
// plus a 32-bit code segment for the PVH entry.
inline constexpr uint16_t kLinuxSelCode32 = 0x08;
inline constexpr uint16_t kLinuxSelCode64 = 0x10;
inline constexpr uint16_t kLinuxSelData = 0x18;
inline constexpr uint16_t kLinuxSelTss = 0x20;

// boot_params offsets sigvisor fills (arch/x86/include/uapi/asm/bootparam.h).
inline constexpr uint64_t kBpExtRamdiskImage = 0x0c0;
inline constexpr uint64_t kBpExtRamdiskSize = 0x0c4;
inline constexpr uint64_t kBpExtCmdLinePtr = 0x0c8;
inline constexpr uint64_t kBpE820Entries = 0x1e8;
inline constexpr uint64_t kBpSetupHeader = 0x1f1;  // struct setup_header hdr
inline constexpr uint64_t kBpE820Table = 0x2d0;
inline constexpr size_t kBpE820MaxEntries = 128;
inline constexpr uint64_t kE820EntrySize = 20;  // {u64 addr, u64 size, u32 type}, packed
// Setup header fields, as boot_params offsets (the same as their bzImage file offsets).
inline constexpr uint64_t kHdrBootFlag = 0x1fe;  // 0xAA55
inline constexpr uint64_t kHdrHeader = 0x202;    // "HdrS"
inline constexpr uint64_t kHdrVersion = 0x206;
inline constexpr uint64_t kHdrTypeOfLoader = 0x210;
inline constexpr uint64_t kHdrLoadflags = 0x211;
inline constexpr uint64_t kHdrRamdiskImage = 0x218;
inline constexpr uint64_t kHdrRamdiskSize = 0x21c;
inline constexpr uint64_t kHdrHeapEndPtr = 0x224;
inline constexpr uint64_t kHdrCmdLinePtr = 0x228;
inline constexpr uint64_t kHdrInitrdAddrMax = 0x22c;
inline constexpr uint64_t kHdrKernelAlignment = 0x230;
inline constexpr uint64_t kHdrCmdlineSize = 0x238;
inline constexpr uint64_t kHdrHardwareSubarch = 0x23c;
inline constexpr uint64_t kHdrSetupData = 0x250;
inline constexpr uint64_t kHdrEnd = 0x26c;  // end of the 2.15 setup header
inline constexpr uint16_t kBootFlagMagic = 0xaa55;
inline constexpr uint32_t kHdrSMagic = 0x53726448;  // "HdrS"
inline constexpr uint8_t kLoadedHigh = 1 << 0, kKaslrFlag = 1 << 1, kKeepSegments = 1 << 6,
                         kCanUseHeap = 1 << 7;
inline constexpr uint8_t kLoaderTypeUndefined = 0xff;

// e820 / hvm_memmap_table_entry types.
inline constexpr uint32_t kE820Ram = 1;
inline constexpr uint32_t kE820Reserved = 2;

// struct hvm_start_info (Xen's arch-x86/hvm/start_info.h), version 1.
inline constexpr uint32_t kPvhStartMagic = 0x336ec578;

struct LinuxBootParams {
  // The bzImage's setup header: its bytes from file offset 0x1f1 to 0x202 + the byte
  // at 0x201 (at most kHdrEnd - 0x1f1 are used). Empty for an ELF vmlinux: sigvisor
  // then writes a minimal 2.15 header of its own. Not used by the PVH entry.
  std::span<const uint8_t> setup_header;
  std::string cmdline;
  std::span<const uint8_t> initrd;  // empty: none
  // The guest-physical range the kernel needs: [kernel_load_begin, + kernel_init_size).
  // For a bzImage its header's init_size; for an ELF vmlinux load_end - load_begin.
  uint64_t kernel_load_begin = 0;
  uint64_t kernel_init_size = 0;
  // The longest command line without its NUL, and the highest address the initrd may
  // touch. A setup header carries its own (cmdline_size, initrd_addr_max), which then
  // win: they are the kernel's word.
  uint32_t cmdline_size = 2047;  // COMMAND_LINE_SIZE - 1
  uint32_t initrd_addr_max = 0x7fffffff;
  int vcpus = 1;
};

// Where the writers put what the kernel finds.
struct LinuxBootPlacement {
  uint64_t initrd_gpa = 0;  // 0 when there is no initrd
  uint64_t initrd_size = 0;
  uint64_t mp_table_gpa = 0;
  uint64_t mp_table_size = 0;
};

// The e820 map sigvisor gives a guest of `memory_size` bytes: [0, 0x9fc00) RAM, the
// EBDA [0x9fc00, 0xa0000) and BIOS [0xf0000, 0x100000) reserved, [1 MiB, end) RAM.
struct E820Entry {
  uint64_t addr = 0;
  uint64_t size = 0;
  uint32_t type = 0;
};
std::vector<E820Entry> LinuxMemoryMap(uint64_t memory_size);

// The 64-bit boot protocol: writes the zero page at kLinuxBootParamsGpa, the command
// line, the initrd, the MP table, the GDT/TSS and the identity page tables. Fails in
// one line on a command line longer than the kernel allows, an initrd that does not
// fit, a setup header without its magic, or guest memory outside [2 MiB, 3 GiB].
absl::StatusOr<LinuxBootPlacement> WriteLinuxBootParams(GuestMemory& memory,
                                                        const LinuxBootParams& params);

// The vCPU at the 64-bit entry (see the top of this file): rip = `entry_gpa`,
// rsi = kLinuxBootParamsGpa, rsp = kLinuxBootStackTop, CPUID `cpuid`.
absl::Status SetUpLinux64Vcpu(KvmVcpu& vcpu, uint64_t entry_gpa,
                              std::span<const kvm_cpuid_entry2> cpuid);

// The physical address of a vmlinux's 64-bit entry. x86-64 vmlinux links
// ENTRY(phys_startup_64), so e_entry is usually physical already; a virtual e_entry
// (0xffffffff81000000 style) is translated through the PT_LOAD that contains it.
// Pass the image's entry() and segments().
absl::StatusOr<uint64_t> LinuxEntryGpa(uint64_t entry, std::span<const ElfSegment> segments);

// The PVH entry: writes hvm_start_info at kLinuxPvhStartInfoGpa with its memory map
// (the e820 map above), the command line, the initrd as module 0, the MP table and
// the GDT/TSS. Same errors as WriteLinuxBootParams; `setup_header` is ignored.
absl::StatusOr<LinuxBootPlacement> WritePvhStartInfo(GuestMemory& memory,
                                                     const LinuxBootParams& params);

// The vCPU at a PVH entry: 32-bit protected mode, paging off, CS = kLinuxSelCode32,
// data segments kLinuxSelData, a busy TSS in TR, ebx = kLinuxPvhStartInfoGpa,
// eip = `entry` (the note's physical address), interrupts off, CPUID `cpuid`.
absl::Status SetUpPvhVcpu(KvmVcpu& vcpu, uint32_t entry, std::span<const kvm_cpuid_entry2> cpuid);

// The local APIC's LINT0 as ExtINT and LINT1 as NMI (virtual-wire mode, what a PC's
// BIOS leaves), in a KVM_GET_LAPIC state, as kvmtool and Firecracker set it before
// the first KVM_RUN; the caller does KVM_GET_LAPIC, this, KVM_SET_LAPIC.
void SetVirtualWireLints(kvm_lapic_state& lapic);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOOT_H_
