// A board: what one kind of guest (boot_target.h) needs of an x86-64 machine. It says
// which in-kernel devices the VM gets, which CPUID the guest sees, how the image is
// loaded and entered, which devices sit on the bus and where the guest's calls arrive,
// and where its exit status comes from. BootAndRun (x86_machine.cc) creates the VM,
// asks the run's board, and runs; it knows no protocol. Adding a kind of guest is
// adding a board.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOARD_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOARD_H_

#include <linux/kvm.h>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/cpu/vcpu_snapshot.h"
#include "arch/x86_64/vmm/cpu/vcpu_state.h"
#include "arch/x86_64/vmm/machine/smp_boot.h"
#include "devices/pc/pc_testdev.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"
#include "vmm/machine/bus.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/guest_protocol.h"
#include "vmm/run/hypercall_table.h"
#include "vmm/run/signal_frame_counts.h"
#include "vmm/snapshot/snapshot_parts.h"

namespace sigvisor::x86 {

struct MachineConfig;

// What a board's devices are wired to, once the VM, its memory and vCPU 0 exist.
struct BoardWiring {
  Bus& bus;
  KvmVm& vm;                  // interrupt lines
  GuestMemory& memory;
  VcpuState& cpu;             // vCPU 0: where a call gate reads its arguments
  HypercallTable& hypercalls;  // the run's table; the interceptors have registered theirs
  std::function<void(std::string_view)> console;  // the session's console
  // `sigvisor snapshot`: what the guest's quiescent point does (saves the VM and ends
  // the run); empty otherwise, and the guest is given its orders at once.
  GuestProtocol::QuiescentHook at_quiescent_point;
  // What the SMP hypercalls act on (the APs, the in-kernel LAPICs); null for a board
  // whose guest makes none. Outlives the run.
  SmpMachine* smp = nullptr;
};

class Board {
 public:
  virtual ~Board() = default;

  // KVM's in-kernel LAPIC, IOAPIC and PIC, and its PIT: made before the vCPUs.
  // (More than one vCPU always gets the irqchip: the APs wait for INIT/SIPI in it.)
  virtual bool in_kernel_irqchip() const = 0;
  virtual bool in_kernel_pit() const { return false; }

  // The CPUID the guest gets, from what KVM supports.
  virtual std::vector<kvm_cpuid_entry2> Cpuid(std::span<const kvm_cpuid_entry2> supported) const {
    return {supported.begin(), supported.end()};
  }

  // The guest's RAM: zeroed memory, or a restored VM's memory image.
  virtual absl::StatusOr<GuestMemory> CreateMemory(uint64_t bytes) {
    return GuestMemory::Create(bytes);
  }

  // Loads `image` into `memory`, writes the kind's boot state there and puts `vcpu`
  // (vCPU 0) at its entry with `cpuid`. Returns the command line the kernel was given.
  virtual absl::StatusOr<std::string> Load(const ElfImage& image, GuestMemory& memory,
                                           KvmVcpu& vcpu,
                                           std::span<const kvm_cpuid_entry2> cpuid) = 0;

  // Makes the board's devices and its call gate and registers them on `wiring.bus`.
  // The devices live in the board and must outlive the run.
  virtual absl::Status Attach(const BoardWiring& wiring) = 0;

  // Where the guest's calls arrive on the bus (sigvisor's hypercall ports, Linux's
  // marker port), or null for a kind that makes none. Valid after Attach.
  virtual const CallGate* gate() const { return nullptr; }

  // SYSCALL must be completed at CPL0 where the host emulates CPL0 and leaves it at
  // CPL3 (syscall_completion.h): the guest's user space makes system calls with it.
  virtual bool uses_syscall() const { return false; }

  // The status the guest asked to exit with through a device (isa-debug-exit), if it did.
  virtual std::optional<int> exit_status() const = 0;

  // The guest starts its APs with a hypercall (SIGVISOR_HC_CPU_UP) rather than with
  // INIT/SIPI through its LAPIC (ap_runner.h's StartMode).
  virtual bool aps_start_by_hypercall() const { return false; }
  // The SMP hypercalls' counts (an SMP sigvisor kernel's board), or null. After Attach.
  virtual const SmpHypercalls* smp_hypercalls() const { return nullptr; }

  // What the signal=pv hypercalls did (sigvisor images only), if the guest made any
  // or the run checked them. Valid after the run.
  virtual std::optional<SignalFrameCounts> signal_frames() const { return std::nullopt; }

  // Where the guest's FPU state is at its quiescent point, which decides what a
  // snapshot saves of it (vcpu_snapshot.h). After the point.
  virtual FpuAtQuiescentPoint fpu_at_quiescent_point() const { return FpuAtQuiescentPoint::kReset; }

  // The board's devices and call gate as snapshot parts, at the guest's quiescent
  // point (saved_vm.h); a restoring board reads them back. A kind whose guest names
  // no quiescent point cannot be saved.
  virtual absl::StatusOr<std::vector<SnapshotPart>> SaveDevices() const {
    return absl::FailedPreconditionError(
        "this kind of guest names no quiescent point, so it cannot be saved yet");
  }
};

// For the boards with KVM's in-kernel irqchip: sets ISA interrupt line `irq` (an IOAPIC
// pin and a PIC input, KVM's default routing, which Linux's MP table states).
// KVM_IRQ_LINE fails only without the irqchip, and a device has no one to tell, so a
// failure is dropped.
void SetIsaIrqLine(KvmVm& vm, int irq, bool level);

// QEMU's pc-testdev on `bus`: its ports, its IRQ-line ports and its memory.
absl::Status RegisterPcTestdev(Bus& bus, PcTestdev& testdev);

// For the boards whose boot state sits below 1 MiB (sigvisor's, Linux's): refuses an
// image that loads there.
absl::Status CheckLoadsAboveBootState(const ElfImage& image);

// The board for `config`'s boot target, or the kind's refusal of what `config` asks
// (a trap mechanism, interceptors, vCPUs, an image it cannot boot), in one line. Makes
// no KVM call, so that a command can check before it opens /dev/kvm.
absl::StatusOr<std::unique_ptr<Board>> MakeBoard(const ElfImage& image,
                                                 const MachineConfig& config);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_BOARD_H_
