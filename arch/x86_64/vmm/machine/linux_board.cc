#include "arch/x86_64/vmm/machine/linux_board.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "arch/x86_64/vmm/machine/linux_boot.h"
#include "arch/x86_64/vmm/machine/linux_host_fit.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/loader/elf_loader.h"

namespace sigvisor::x86 {
namespace {

constexpr uint64_t kCom1Port = 0x3f8;
constexpr int kCom1Irq = 4;

}  // namespace

absl::Status LinuxBoard::CheckTrap(TrapMechanism trap) {
  if (trap == TrapMechanism::kOff) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "--trap=%s is for sigvisor images (64-bit code scanned for trap sites); a Linux "
      "kernel runs with --trap=off",
      TrapMechanismName(trap)));
}

absl::Status LinuxBoard::CheckInterceptors(bool trace_only, bool injects) {
  if (trace_only) return absl::OkStatus();
  if (injects) {
    return absl::UnimplementedError(
        "--inject is for the bundled kernel: fault injection reads sigvisor's boot protocol "
        "(its phase markers, the host-signal mailbox, the kernel's own report of each "
        "fault); a Linux kernel speaks none of it");
  }
  return absl::UnimplementedError(
      "--gdb: the gdb stub works on sigvisor images only; not on a Linux kernel");
}

absl::StatusOr<std::unique_ptr<Board>> LinuxBoard::Make(const ElfImage& image,
                                                        const LinuxKernel& kernel,
                                                        const MachineConfig& config) {
  if (absl::Status s = CheckTrap(config.trap); !s.ok()) return s;
  if (!config.interceptors.empty()) {
    if (absl::Status s = CheckInterceptors(config.interceptors_trace_only, config.injection_events);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = CheckLoadsAboveBootState(image); !s.ok()) return s;
  return std::unique_ptr<Board>(new LinuxBoard(kernel, config));
}

LinuxBoard::LinuxBoard(const LinuxKernel& kernel, const MachineConfig& config)
    : kernel_(kernel),
      cmdline_(config.cmdline),
      cpl0_emulated_(config.cpl0_emulated),
      vcpus_(config.vcpus) {}

std::vector<kvm_cpuid_entry2> LinuxBoard::Cpuid(
    std::span<const kvm_cpuid_entry2> supported) const {
  return LinuxCpuid(supported, cpl0_emulated_);
}

// The kernel's boot state: zero page (or PVH start info), command line, initrd, MP
// table, page tables, and the vCPU at its 64-bit (or PVH) entry with the local APIC in
// virtual-wire mode.
absl::StatusOr<std::string> LinuxBoard::Load(const ElfImage& image, GuestMemory& memory,
                                             KvmVcpu& vcpu,
                                             std::span<const kvm_cpuid_entry2> cpuid) {
  if (absl::Status s = LoadElfImage(image, memory); !s.ok()) return s;
  absl::StatusOr<uint64_t> tsc_khz = vcpu.TscKhz();
  std::string cmdline = LinuxBaseCmdline(cpl0_emulated_, tsc_khz.ok() ? *tsc_khz : 0);
  if (!cmdline_.empty()) absl::StrAppend(&cmdline, " ", cmdline_);

  LinuxBootParams params;
  params.setup_header = kernel_.setup_header;
  params.cmdline = cmdline;
  params.initrd = kernel_.initrd;
  params.kernel_load_begin = image.load_begin();
  params.kernel_init_size =
      std::max<uint64_t>(kernel_.init_size, image.load_end() - image.load_begin());
  params.cmdline_size = kernel_.cmdline_size;
  params.initrd_addr_max = kernel_.initrd_addr_max;
  params.vcpus = vcpus_;
  if (kernel_.pvh) {
    if (!image.pvh_entry()) {
      return absl::InvalidArgumentError(
          "the vmlinux has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY)");
    }
    if (absl::StatusOr<LinuxBootPlacement> placed = WritePvhStartInfo(memory, params);
        !placed.ok()) {
      return placed.status();
    }
    if (absl::Status s = SetUpPvhVcpu(vcpu, *image.pvh_entry(), cpuid); !s.ok()) return s;
  } else {
    if (absl::StatusOr<LinuxBootPlacement> placed = WriteLinuxBootParams(memory, params);
        !placed.ok()) {
      return placed.status();
    }
    absl::StatusOr<uint64_t> entry = LinuxEntryGpa(image.entry(), image.segments());
    if (!entry.ok()) return entry.status();
    if (absl::Status s = SetUpLinux64Vcpu(vcpu, *entry, cpuid); !s.ok()) return s;
  }
  absl::StatusOr<kvm_lapic_state> lapic = vcpu.GetLapic();
  if (!lapic.ok()) return lapic.status();
  SetVirtualWireLints(*lapic);
  if (absl::Status s = vcpu.SetLapic(*lapic); !s.ok()) return s;
  return cmdline;
}

absl::Status LinuxBoard::Attach(const BoardWiring& wiring) {
  devices_.emplace(wiring.vm, wiring.memory.size(), wiring.console);
  markers_.emplace(wiring.cpu);
  if (absl::Status s = devices_->Register(wiring.bus); !s.ok()) return s;
  return wiring.bus.Register(AddressSpace::kPort, SIGVISOR_LINUX_MARKER_PORT,
                             LinuxMarkerGate::kPortCount, &*markers_);
}

std::optional<int> LinuxBoard::exit_status() const {
  return devices_ ? devices_->debug_exit.exit_status() : std::nullopt;
}

LinuxBoard::Devices::Devices(KvmVm& vm, uint64_t memory_bytes,
                             std::function<void(std::string_view)> console)
    : vm(vm),
      serial(std::move(console), [this](bool level) { SetIrqLine(kCom1Irq, level); }),
      rtc(memory_bytes, 0, [] { return absl::Now(); }),
      i8042([this](bool level) { SetIrqLine(I8042::kKeyboardIrq, level); },
            [this](bool level) { SetIrqLine(I8042::kAuxIrq, level); }),
      testdev([this](int line, bool level) { SetIrqLine(line, level); }) {}

void LinuxBoard::Devices::SetIrqLine(int irq, bool level) { SetIsaIrqLine(vm, irq, level); }

absl::Status LinuxBoard::Devices::Register(Bus& bus) {
  const std::vector<absl::Status> registered = {
      bus.Register(AddressSpace::kPort, kCom1Port, Serial16550::kPortCount, &serial),
      bus.Register(AddressSpace::kPort, CmosRtc::kPortBase, CmosRtc::kPortCount, &rtc),
      bus.Register(AddressSpace::kPort, I8042::kDataPort, I8042::kPortCount,
                   &i8042.data_port()),
      bus.Register(AddressSpace::kPort, I8042::kCommandPort, I8042::kPortCount,
                   &i8042.command_port()),
      RegisterPcTestdev(bus, testdev),
      bus.Register(AddressSpace::kPort, PciAbsent::kPortBase, PciAbsent::kPortCount, &pci),
      bus.Register(AddressSpace::kPort, kDebugExitPort, DebugExit::kPortCount, &debug_exit),
  };
  for (const absl::Status& s : registered) {
    if (!s.ok()) return s;
  }
  bus.SetUnclaimed(AddressSpace::kPort, &unclaimed_ports);
  bus.SetUnclaimed(AddressSpace::kMmio, &unclaimed_mmio);
  return absl::OkStatus();
}

}  // namespace sigvisor::x86
