#include "arch/x86_64/vmm/machine/linux_board.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "arch/x86_64/vmm/cpu/vcpu_snapshot.h"
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
  return std::unique_ptr<Board>(new LinuxBoard(kernel, config, nullptr));
}

absl::StatusOr<std::unique_ptr<Board>> LinuxBoard::MakeRestored(const ElfImage& image,
                                                                const RestoredVm& restored,
                                                                const MachineConfig& config) {
  if (restored.saved == nullptr) return absl::InternalError("a restored VM without its snapshot");
  const SavedVm& saved = *restored.saved;
  if (absl::Status s = CheckSnapshotFits(saved, "linux", "Linux kernels", "kernel",
                                         restored.image_fnv1a64, config.memory_bytes, config.vcpus);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckTrap(config.trap); !s.ok()) return s;
  // The step tracer starts at a phase's BEGIN marker, long after the restore; the
  // injector and the gdb stub are refused as for a booted Linux kernel.
  if (!config.interceptors.empty()) {
    if (absl::Status s = CheckInterceptors(config.interceptors_trace_only, config.injection_events);
        !s.ok()) {
      return s;
    }
  }
  static const LinuxKernel kRestoredKernel;  // nothing is loaded
  return std::unique_ptr<Board>(new LinuxBoard(kRestoredKernel, config, restored.saved));
}

LinuxBoard::LinuxBoard(const LinuxKernel& kernel, const MachineConfig& config,
                       std::shared_ptr<const SavedVm> restoring)
    : kernel_(kernel),
      cmdline_(config.cmdline),
      cpl0_emulated_(config.cpl0_emulated),
      vcpus_(config.vcpus),
      restoring_(std::move(restoring)) {}

absl::StatusOr<GuestMemory> LinuxBoard::CreateMemory(uint64_t bytes) {
  if (!restoring_) return GuestMemory::Create(bytes);
  return MapSavedMemory(*restoring_);
}

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
  if (restoring_) {
    // The saved CPUID, which must be this host's: set before the first KVM_RUN and
    // before the MSRs it gates; then vCPU 0 in vcpu_snapshot.h's order.
    if (absl::Status s = CheckSameCpuid(*restoring_, cpuid); !s.ok()) return s;
    if (absl::Status s = vcpu.SetCpuid(restoring_->cpuid); !s.ok()) return s;
    if (absl::Status s = RestoreVcpu(vcpu, VcpuToRestore(*restoring_, restoring_->vcpu)); !s.ok()) {
      return s;
    }
    return cmdline_;
  }
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
  // init asks for its orders once booted: the run's words (those the kernel command
  // line gave it too), or, for `sigvisor snapshot`, the VM saved there first.
  LinuxMarkerGate::QuiescentHook at_quiescent_point;
  if (wiring.at_quiescent_point) {
    at_quiescent_point = [save = wiring.at_quiescent_point] { return save(0); };
  }
  markers_.emplace(wiring.cpu, cmdline_, std::move(at_quiescent_point));
  if (restoring_) {
    if (absl::Status s = RestoreDevices(wiring.memory); !s.ok()) return s;
  }
  if (absl::Status s = devices_->Register(wiring.bus); !s.ok()) return s;
  return wiring.bus.Register(AddressSpace::kPort, SIGVISOR_LINUX_MARKER_PORT,
                             LinuxMarkerGate::kPortCount, &*markers_);
}

namespace {
constexpr char kSerialPart[] = "serial";
constexpr char kRtcPart[] = "cmos_rtc";
constexpr char kI8042Part[] = "i8042";
constexpr char kTestdevPart[] = "pc_testdev";
constexpr char kOrdersPart[] = "linux_orders";
}  // namespace

// The devices' state at init's quiescent point, and where init waits for its orders.
// The stubs (PCI's absent bus, the unclaimed ports and MMIO) and isa-debug-exit (the
// run ends at its first write) hold none.
absl::StatusOr<std::vector<SnapshotPart>> LinuxBoard::SaveDevices() const {
  if (!devices_ || !markers_ || !markers_->orders_request()) {
    return absl::FailedPreconditionError("init has not reached its quiescent point");
  }
  absl::StatusOr<I8042::State> i8042 = devices_->i8042.SaveState();
  if (!i8042.ok()) return i8042.status();
  std::vector<SnapshotPart> parts;
  PartWriter serial(kSerialPart);
  serial.PutStruct(devices_->serial.SaveState());
  parts.push_back(std::move(serial).Finish());
  PartWriter rtc(kRtcPart);
  rtc.PutStruct(devices_->rtc.SaveState());
  parts.push_back(std::move(rtc).Finish());
  PartWriter keyboard(kI8042Part);
  keyboard.PutStruct(*i8042);
  parts.push_back(std::move(keyboard).Finish());
  PartWriter testdev(kTestdevPart);
  testdev.PutStruct(devices_->testdev.SaveState());
  parts.push_back(std::move(testdev).Finish());
  const LinuxOrdersRequest& request = *markers_->orders_request();
  PartWriter orders(kOrdersPart);
  orders.PutU64(request.buffer_gva);
  orders.PutU64(request.buffer_len);
  orders.PutU64(request.cr3);
  parts.push_back(std::move(orders).Finish());
  return parts;
}

// The devices as they were saved, and init's waiting request answered with this run's
// orders: it reads them as soon as it runs.
absl::Status LinuxBoard::RestoreDevices(GuestMemory& memory) {
  absl::StatusOr<Serial16550::State> serial =
      ReadDevicePart<Serial16550::State>(*restoring_, kSerialPart, "serial state");
  if (!serial.ok()) return serial.status();
  absl::StatusOr<CmosRtc::State> rtc =
      ReadDevicePart<CmosRtc::State>(*restoring_, kRtcPart, "cmos rtc state");
  if (!rtc.ok()) return rtc.status();
  absl::StatusOr<I8042::State> i8042 =
      ReadDevicePart<I8042::State>(*restoring_, kI8042Part, "i8042 state");
  if (!i8042.ok()) return i8042.status();
  absl::StatusOr<PcTestdev::State> testdev =
      ReadDevicePart<PcTestdev::State>(*restoring_, kTestdevPart, "pc-testdev state");
  if (!testdev.ok()) return testdev.status();
  absl::StatusOr<const SnapshotPart*> orders = DevicePart(*restoring_, kOrdersPart);
  if (!orders.ok()) return orders.status();
  PartReader orders_in(**orders);
  LinuxOrdersRequest request;
  request.buffer_gva = orders_in.GetU64();
  request.buffer_len = orders_in.GetU64();
  request.cr3 = orders_in.GetU64();
  if (absl::Status s = orders_in.Done(); !s.ok()) return s;
  devices_->serial.RestoreState(*serial);
  devices_->rtc.RestoreState(*rtc);
  devices_->i8042.RestoreState(*i8042);
  devices_->testdev.RestoreState(*testdev);
  if (absl::Status s = AnswerLinuxOrders(memory, request, cmdline_); !s.ok()) {
    return absl::Status(
        s.code(), absl::StrFormat("snapshot %s: the orders: %s", restoring_->dir, s.message()));
  }
  return absl::OkStatus();
}

FpuAtQuiescentPoint LinuxBoard::fpu_at_quiescent_point() const {
  if (markers_ && markers_->orders_request() && markers_->orders_request()->fpu_held) {
    return FpuAtQuiescentPoint::kHeldByGuest;
  }
  return FpuAtQuiescentPoint::kInRegisters;
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
