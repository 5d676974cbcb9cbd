// The boot state a Multiboot v1 kernel gets, the way `qemu-system-x86_64 -kernel`
// gives it: 32-bit protected mode with paging off, flat 4 GiB code and data segments,
// interrupts off, a busy 32-bit TSS in TR, EAX = 0x2BADB002, EBX = the physical address
// of the Multiboot information structure, CPUID from KVM_GET_SUPPORTED_CPUID.
//
// Guest-physical layout (below 32 KiB, so kernels may load from 0x8000 up):
//   0x1000 GDT: 0x08 flat code32, 0x10 flat data, 0x18 busy TSS32 (at 0x1080)
//   0x2000 the Multiboot info, 0x2100 its memory map, 0x2200 the boot loader name,
//   0x2400-0x2fff the command line, 0x3000 the module list, 0x3400-0x7fff module strings
//   modules themselves: page-aligned, after the kernel's last byte (and 1 MiB)
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_MULTIBOOT_BOOT_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_MULTIBOOT_BOOT_H_

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

inline constexpr uint64_t kMultibootGdtGpa = 0x1000;
inline constexpr uint64_t kMultibootTssGpa = 0x1080;
inline constexpr uint64_t kMultibootInfoGpa = 0x2000;
inline constexpr uint64_t kMultibootMmapGpa = 0x2100;
inline constexpr uint64_t kMultibootLoaderNameGpa = 0x2200;
inline constexpr uint64_t kMultibootCmdlineGpa = 0x2400;
inline constexpr uint64_t kMultibootCmdlineEnd = 0x3000;
inline constexpr uint64_t kMultibootModsGpa = 0x3000;
inline constexpr uint64_t kMultibootModStringsGpa = 0x3400;
inline constexpr uint64_t kMultibootLowEnd = 0x8000;  // images load at or above this
inline constexpr size_t kMultibootMaxModules = 64;

// Multiboot info flags sigvisor sets.
inline constexpr uint32_t kMbiMemory = 1u << 0;
inline constexpr uint32_t kMbiCmdline = 1u << 2;
inline constexpr uint32_t kMbiMods = 1u << 3;
inline constexpr uint32_t kMbiMmap = 1u << 6;
inline constexpr uint32_t kMbiLoaderName = 1u << 9;

// One `--module FILE[=STRING]`: its contents and the string the kernel sees.
struct MultibootModule {
  std::string string;
  std::vector<uint8_t> bytes;
};

// Reads `--module` arguments: "FILE" (string FILE) or "FILE=STRING".
absl::StatusOr<MultibootModule> ReadMultibootModule(const std::string& spec);

// Checks the image fits, then writes the GDT, TSS, info, command line and modules.
// `cmdline` is what the kernel reads (conventionally "<image> <args>").
absl::Status WriteMultibootState(GuestMemory& memory, const ElfImage& image,
                                 const std::string& cmdline,
                                 const std::vector<MultibootModule>& modules);

// The vCPU's entry state (see the top of this file).
absl::Status SetUpMultibootVcpu(KvmVcpu& vcpu, uint64_t entry,
                                std::span<const kvm_cpuid_entry2> cpuid);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_MULTIBOOT_BOOT_H_
