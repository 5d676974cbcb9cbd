// An x86-64 VM saved at its guest's quiescent point (docs/snapshots.md): the parts of
// its snapshot as the machine writes and reads them. The machine's own parts are the
// header, the CPUID the guest booted with, vCPU 0 and the memory image's index; the
// board adds its devices' (board.h: SaveDevices), which only it reads back.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_SAVED_VM_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_SAVED_VM_H_

#include <linux/kvm.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/cpu/vcpu_snapshot.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/snapshot/memory_image.h"
#include "vmm/snapshot/snapshot_header.h"
#include "vmm/snapshot/snapshot_parts.h"

namespace sigvisor::x86 {

// The parts of a VM with KVM's in-kernel devices (x86_machine.cc saves them among the
// board's and puts them back before the vCPUs): the PIC master, PIC slave and IOAPIC
// (three kvm_irqchip), the PIT (kvm_pit_state2), the KVM clock (kvm_clock_data).
inline constexpr char kIrqchipPart[] = "kvm_irqchip";
inline constexpr char kPitPart[] = "kvm_pit";
inline constexpr char kClockPart[] = "kvm_clock";

struct SavedVm {
  std::string dir;
  SnapshotHeader header;
  std::vector<kvm_cpuid_entry2> cpuid;  // vCPU 0's, as it booted
  VcpuSnapshot vcpu;                    // vCPU 0
  // vCPUs 1 .. header.vcpus - 1, in order. At the bundled kernel's quiescent point none
  // has run yet (it starts them after its orders), so each holds the state its VM gave
  // it: its TSC (saved with vCPU 0's) and, with KVM's irqchip, its LAPIC waiting for INIT.
  std::vector<VcpuSnapshot> aps;
  MemoryImageIndex memory;
  std::vector<SnapshotPart> devices;  // the board's
  // Bytes of the state file and of the memory image on disk, for reports: set by
  // WriteSavedVm.
  uint64_t state_bytes = 0;
  uint64_t memory_disk_bytes = 0;
};

// The name of vCPU `index`'s part: "vcpu0", "vcpu1", ...
std::string VcpuPartName(int index);

// The header of a snapshot about to be taken: what the caller knows (the image as the
// command named it, `--image` and `--variant`, and the FNV-1a of its bytes as given: a
// file's, a bzImage's and not its payload's; the binary's version; the host kind), with
// the guest ABI, the architecture and the time filled in. The machine adds the rest
// when it saves (x86_machine.h: save_header).
SnapshotHeader NewSnapshotHeader(uint64_t image_fnv1a64, std::string image_name,
                                 std::string variant, std::string sigvisor_version,
                                 std::string host_kind);

// The part of `vm.devices` named `name`, or the refusal naming it and the snapshot.
absl::StatusOr<const SnapshotPart*> DevicePart(const SavedVm& vm, std::string_view name);

// A device's state saved as one struct in the part of `vm.devices` named `part`;
// `what` names the struct in a refusal.
template <typename State>
absl::StatusOr<State> ReadDevicePart(const SavedVm& vm, std::string_view part, const char* what) {
  absl::StatusOr<const SnapshotPart*> found = DevicePart(vm, part);
  if (!found.ok()) return found.status();
  PartReader in(**found);
  const State state = in.GetStruct<State>(what);
  if (absl::Status s = in.Done(); !s.ok()) return s;
  return state;
}

// Writes DIR/memory from `memory` (only the pages that are not zero; vm.memory gets
// its index) and then DIR/state, each complete or not at all.
absl::Status WriteSavedVm(SavedVm& vm, const GuestMemory& memory);

// Reads and checks DIR/state (every part's checksum; the memory image is checked when
// it is mapped, MapSavedMemory).
absl::StatusOr<SavedVm> ReadSavedVm(const std::string& dir);

// The guest's RAM from DIR/memory, mapped copy-on-write after its runs' checksums.
absl::StatusOr<GuestMemory> MapSavedMemory(const SavedVm& vm);

// A restore on another CPU would run the guest with other features than it booted
// with: the CPUID this host gives the board must equal the saved one.
absl::Status CheckSameCpuid(const SavedVm& vm, std::span<const kvm_cpuid_entry2> here);

// A saved vCPU as it is put back. On AMD SVM, KVM_GET_SREGS reports TR as busy (type
// 11) whatever the VMCB holds (KVM's svm_get_segment adds the bit: the VMCB keeps type
// 9 after the guest's LTR); the TR of a guest that loaded one (a nonzero selector) is put
// back as the VMCB held it: a CPU that checks the cached type when a CPL3 `out` consults
// the TSS I/O bitmap (QEMU TCG, the hardware lane's) refuses a busy one.
VcpuSnapshot VcpuToRestore(const SavedVm& vm, const VcpuSnapshot& saved);

// What every board checks of a snapshot before it restores one, refused naming the
// snapshot: it holds a `guest_kind` guest ("sigvisor", "linux"; `board_restores` says
// what the board takes, "sigvisor images"), was taken of the image given for the
// restore (the FNV-1a of its bytes as given, RestoredVm::image_fnv1a64; `noun`: "image",
// "kernel"), and has the RAM and the vCPUs the run asks for.
absl::Status CheckSnapshotFits(const SavedVm& saved, std::string_view guest_kind,
                               std::string_view board_restores, std::string_view noun,
                               uint64_t image_fnv1a64, uint64_t memory_bytes, int vcpus);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_SAVED_VM_H_
