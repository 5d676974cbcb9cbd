// What an x86-64 machine boots, as a type: one kind of guest per alternative, chosen
// once, when the image is read (BootTargetOf; and a bzImage is Linux by its file), the
// way Firecracker's kernel loader returns the entry protocol. Each kind has its board
// (board.h), which loads it, puts its own devices on the bus and refuses what the kind
// cannot do; nothing else asks an image which protocol it speaks.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOOT_TARGET_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOOT_TARGET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "arch/x86_64/vmm/machine/multiboot_boot.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor::x86 {

// An image with sigvisor's ABI note (the bundled kernel, the test guests): its boot
// info, its hypercalls, one vCPU. Also what an ELF file of no other kind is taken
// for, so that its board refuses it with the ABI's own words.
struct SigvisorKernel {};

// A Multiboot v1 kernel (a Multiboot header and no sigvisor note), booted as
// `qemu-system-x86_64 -kernel` boots it. The kernel's command line is
// "<image_name> <cmdline>" (QEMU's convention; just cmdline when image_name is empty);
// `modules` go into its Multiboot info.
struct MultibootKernel {
  std::string image_name;
  std::vector<MultibootModule> modules;
  // KVM_CREATE_IRQCHIP before the vCPUs: an in-kernel LAPIC, IOAPIC and PIC for
  // kernels that use timers or interrupts; `hlt` waits in KVM. Implied by vcpus > 1.
  bool irqchip = false;
};

// A stock Linux kernel. The image is its ELF vmlinux: a bzImage's payload,
// decompressed on the host, boots by the 64-bit boot protocol; a vmlinux file with a
// PVH note (ElfImage::pvh_entry) by the PVH entry, as QEMU and Firecracker boot one.
// Either way on the PC of linux_board.h, with the command line of linux_host_fit.h
// before the run's.
struct LinuxKernel {
  std::vector<uint8_t> setup_header;  // the bzImage's (boot_params.hdr); empty for a vmlinux
  bool pvh = false;                   // enter at the image's PVH entry
  uint64_t init_size = 0;             // memory it needs from its load address; 0: its image's
  uint32_t cmdline_size = 2047;       // the longest command line it takes
  uint32_t initrd_addr_max = 0x7fffffff;
  std::vector<uint8_t> initrd;        // empty: none
};

struct SavedVm;  // saved_vm.h

// The protocol a target boots by, for reports (and the tests that read them).
enum class BootProtocol {
  kSigvisor,   // sigvisor's ABI note: its boot info, hypercalls, one vCPU
  kMultiboot,  // a Multiboot v1 header and no sigvisor note: QEMU's -kernel state
  kLinux,      // the 64-bit boot protocol, or the PVH entry
};

// A VM saved at its guest's quiescent point (`sigvisor snapshot`, docs/snapshots.md),
// restored instead of booted: its memory image mapped copy-on-write, its vCPU and its
// devices put back, and the guest given the run's orders. The kind it was booted as
// serves it again (its board, restoring): a sigvisor image, or a stock Linux kernel
// whose embedded init named its quiescent point (the Linux marker protocol's ORDERS).
struct RestoredVm {
  std::shared_ptr<const SavedVm> saved;  // read and checked before KVM is opened
  // What was saved: kSigvisor or kLinux (the snapshot header's guest kind).
  BootProtocol protocol = BootProtocol::kSigvisor;
  // The FNV-1a of the image this restore was given as given (launch::LoadedImage's
  // source_fnv1a64: a bzImage's file, not its payload), which must be the saved one's.
  uint64_t image_fnv1a64 = 0;
};

using BootTarget = std::variant<SigvisorKernel, MultibootKernel, LinuxKernel, RestoredVm>;

// (A RestoredVm speaks the protocol of what was saved.)
BootProtocol ProtocolOf(const BootTarget& target);

// The kind of an ELF image, decided here and nowhere else: the sigvisor ABI note
// wins (sigvisor's own images also carry a Multiboot header, for QEMU); then a
// Multiboot v1 header; then Linux's PVH entry note; anything else is taken for a
// sigvisor image, which its board refuses by its ABI check.
BootTarget BootTargetOf(const ElfImage& image);

// What `run --module` and `--irqchip` add to a Multiboot kernel: the modules are read
// from their specs ("FILE" or "FILE=STRING", ReadMultibootModule) and `image_name`
// starts its command line. Another kind refuses modules in one line and does nothing
// with `irqchip` but refuse it where it cannot have one (a sigvisor image: its traps
// need `hlt` to reach the VMM; a Linux kernel always has the irqchip).
absl::Status AddMultibootOptions(BootTarget& target, std::string_view image_name,
                                 bool irqchip, const std::vector<std::string>& module_specs);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOOT_TARGET_H_
