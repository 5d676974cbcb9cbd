// The board of a stock Linux kernel: the PC it boots on, as kvmtool and Firecracker
// give it. The in-kernel irqchip and PIT; COM1 with its interrupt on IRQ 4, the CMOS
// RTC, the i8042's reset line, PCI configuration space with no devices, QEMU's
// pc-testdev and isa-debug-exit; every port and MMIO address that nothing claims reads
// as all-ones and ignores writes, as on a PC (the exit ledger counts those by port).
// The Linux marker port, by which the embedded init marks its phases, is its call gate
// (linux_marker_gate.h). The kernel is loaded by the 64-bit boot protocol or entered at
// its PVH note (linux_boot.h), with the CPUID and command line of linux_host_fit.h.
//
// init names its quiescent point (the ORDERS marker), so this board's VMs can be saved
// there and restored (docs/snapshots.md): restoring, the board maps the memory image,
// puts vCPU 0 and its devices back (the machine puts back the in-kernel irqchip, PIT
// and clock, and the APs: Linux's have run since boot, and the machine reads them once
// they are stopped), and writes the run's orders into the buffer init is waiting on.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOARD_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOARD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "arch/x86_64/vmm/machine/board.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "arch/x86_64/vmm/machine/linux_marker_gate.h"
#include "arch/x86_64/vmm/machine/saved_vm.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "devices/pc/cmos_rtc.h"
#include "devices/pc/debug_exit.h"
#include "devices/pc/i8042.h"
#include "devices/pc/pc_stubs.h"
#include "devices/pc/pc_testdev.h"
#include "devices/pc/unclaimed.h"
#include "devices/serial16550.h"

namespace sigvisor::x86 {

class LinuxBoard : public Board {
 public:
  // Refuses what CheckTrap and CheckInterceptors refuse.
  static absl::StatusOr<std::unique_ptr<Board>> Make(const ElfImage& image,
                                                     const LinuxKernel& kernel,
                                                     const MachineConfig& config);

  // A VM of this board saved by `sigvisor snapshot` at init's quiescent point (its
  // ORDERS marker), restored: refuses a snapshot of another image or size of machine,
  // and what Make refuses.
  static absl::StatusOr<std::unique_ptr<Board>> MakeRestored(const ElfImage& image,
                                                             const RestoredVm& restored,
                                                             const MachineConfig& config);

  // What a Linux kernel refuses whatever its image, written here once: Make refuses by
  // these, and a command that decides before it has loaded one asks them (bench, which
  // words the refusal in its own flags' terms).
  // A trap mechanism other than off: the mechanisms patch and count sigvisor images'
  // sites.
  static absl::Status CheckTrap(TrapMechanism trap);
  // A run's interceptors, when it has any: the step tracer alone (`trace_only`) follows
  // a Linux kernel; the gdb stub and the fault injector read sigvisor's boot protocol.
  // The refusal names the fault injector (--inject) when the run has one (`injects`),
  // else the gdb stub.
  static absl::Status CheckInterceptors(bool trace_only, bool injects = false);

  bool in_kernel_irqchip() const override { return true; }
  bool in_kernel_pit() const override { return true; }
  std::vector<kvm_cpuid_entry2> Cpuid(std::span<const kvm_cpuid_entry2> supported) const override;
  absl::StatusOr<std::string> Load(const ElfImage& image, GuestMemory& memory, KvmVcpu& vcpu,
                                   std::span<const kvm_cpuid_entry2> cpuid) override;
  absl::Status Attach(const BoardWiring& wiring) override;
  const CallGate* gate() const override { return markers_ ? &*markers_ : nullptr; }
  bool uses_syscall() const override { return true; }
  std::optional<int> exit_status() const override;
  absl::StatusOr<GuestMemory> CreateMemory(uint64_t bytes) override;
  // Held by init (SIGVISOR_LINUX_ORDERS_FPU_HELD) unless its ORDERS marker did not say
  // so; then in vCPU 0's registers only.
  FpuAtQuiescentPoint fpu_at_quiescent_point() const override;
  absl::StatusOr<std::vector<SnapshotPart>> SaveDevices() const override;

 private:
  // The PC's devices, wired to the VM's interrupt lines.
  struct Devices {
    Devices(KvmVm& vm, uint64_t memory_bytes, std::function<void(std::string_view)> console);
    Devices(const Devices&) = delete;
    Devices& operator=(const Devices&) = delete;
    absl::Status Register(Bus& bus);
    void SetIrqLine(int irq, bool level);  // SetIsaIrqLine on the board's VM

    KvmVm& vm;
    Serial16550 serial;
    CmosRtc rtc;
    I8042 i8042;
    PciAbsent pci;
    PcTestdev testdev;
    DebugExit debug_exit;
    Unclaimed unclaimed_ports;
    Unclaimed unclaimed_mmio;
  };

  LinuxBoard(const LinuxKernel& kernel, const MachineConfig& config,
             std::shared_ptr<const SavedVm> restoring);
  absl::Status RestoreDevices(GuestMemory& memory);

  const LinuxKernel& kernel_;
  std::string cmdline_;  // the run's words, after sigvisor's own
  bool cpl0_emulated_ = false;
  int vcpus_ = 1;
  std::optional<Devices> devices_;
  std::optional<LinuxMarkerGate> markers_;
  std::shared_ptr<const SavedVm> restoring_;  // null: booting
};

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_LINUX_BOARD_H_
