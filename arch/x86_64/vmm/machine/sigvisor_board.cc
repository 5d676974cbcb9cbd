#include "arch/x86_64/vmm/machine/sigvisor_board.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/machine/boot_layout.h"
#include "arch/x86_64/vmm/machine/long_mode.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/loader/elf_loader.h"
#include "vmm/machine/boot_info.h"

namespace sigvisor::x86 {

namespace {

// What a sigvisor image on `config.vcpus` vCPUs needs: an SMP build that runs on that
// many, --trap off, neither injector nor debugger; and --ipi and --lapic only there.
absl::Status CheckSmp(const ElfImage& image, const MachineConfig& config) {
  if (config.vcpus == 1) {
    if (config.ipi) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--ipi %s: a machine of one vCPU sends no IPIs; give --vcpus 2 or more with an SMP "
          "build (--variant smp=on)",
          IpiMethodName(*config.ipi)));
    }
    if (config.lapic) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--lapic %s: a machine of one vCPU has no local APIC (its kernel takes no "
          "interrupts); give --vcpus 2 or more with an SMP build (--variant smp=on)",
          LapicName(*config.lapic)));
    }
    return absl::OkStatus();
  }
  if (image.smp_max_cpus() == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--vcpus %d: this build of the kernel is uniprocessor (no SMP note); give --variant "
        "smp=on (or a variant's smp=on counterpart)",
        config.vcpus));
  }
  if (config.vcpus > static_cast<int>(image.smp_max_cpus())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--vcpus %d: this build of the kernel runs on at most %d CPUs (its SMP note)", config.vcpus,
        image.smp_max_cpus()));
  }
  if (config.trap != TrapMechanism::kOff) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--trap=%s: the trap engine watches vCPU 0 only: --trap off with --vcpus > 1",
        TrapMechanismName(config.trap)));
  }
  if (config.injection_events) {
    return absl::UnimplementedError(absl::StrFormat(
        "--inject with --vcpus %d: fault injection works on vCPU 0 only; give --vcpus 1",
        config.vcpus));
  }
  if (!config.interceptors.empty()) {
    return absl::UnimplementedError(absl::StrFormat(
        "--gdb with --vcpus %d: the gdb stub and the tracer follow vCPU 0 only; give --vcpus 1",
        config.vcpus));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Board>> SigvisorBoard::Make(const ElfImage& image,
                                                           const SigvisorKernel&,
                                                           const MachineConfig& config) {
  if (absl::Status s = CheckAbiVersion(image, SIGVISOR_ABI_VERSION); !s.ok()) {
    if (image.abi_version()) return s;
    return absl::Status(s.code(), absl::StrCat(s.message(),
                                               "; nor is it a Multiboot kernel (no Multiboot "
                                               "v1 header, magic 0x1BADB002, in its first "
                                               "8 KiB)"));
  }
  if (absl::Status s = CheckSmp(image, config); !s.ok()) return s;
  if (absl::Status s = CheckLoadsAboveBootState(image); !s.ok()) return s;
  return std::unique_ptr<Board>(new SigvisorBoard(config, image.smp_max_cpus() > 0, nullptr));
}

absl::StatusOr<std::unique_ptr<Board>> SigvisorBoard::MakeRestored(const ElfImage& image,
                                                                   const RestoredVm& restored,
                                                                   const MachineConfig& config) {
  if (restored.saved == nullptr) return absl::InternalError("a restored VM without its snapshot");
  const SavedVm& saved = *restored.saved;
  const SnapshotHeader& header = saved.header;
  if (absl::Status s = CheckAbiVersion(image, SIGVISOR_ABI_VERSION); !s.ok()) return s;
  auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat("snapshot %s %s", saved.dir, why));
  };
  if (absl::Status s = CheckSnapshotFits(saved, "sigvisor", "sigvisor images", "image",
                                         restored.image_fnv1a64, config.memory_bytes, config.vcpus);
      !s.ok()) {
    return s;
  }
  // Several vCPUs: the machine the kernel booted for (its boot info names the IPI way,
  // read once it starts its APs, after the quiescent point), and what any SMP run needs.
  if (config.vcpus > 1) {
    const std::string asked = absl::StrFormat(
        "--ipi %s --lapic %s", IpiMethodName(IpiMethodOf(config)), LapicName(LapicOf(config)));
    const std::string held = absl::StrFormat("--ipi %s --lapic %s", header.ipi, header.lapic);
    if (asked != held) {
      return refuse(absl::StrFormat("holds a VM of %d vCPUs booted with %s; this run asks for %s",
                                    header.vcpus, held, asked));
    }
    if (!config.interceptors.empty() && config.interceptors_trace_only) {
      return refuse(absl::StrFormat(
          "holds a VM of %d vCPUs, and the step tracer follows vCPU 0 only: trace a snapshot "
          "of one vCPU",
          header.vcpus));
    }
    if (absl::Status s = CheckSmp(image, config); !s.ok()) return s;
  } else if (config.ipi || config.lapic) {
    return refuse(absl::StrFormat("holds a VM of one vCPU: it cannot be restored with --%s",
                                  config.ipi ? "ipi" : "lapic"));
  }
  // What the kernel read at boot, before its quiescent point, it keeps: a debugreg=pv
  // kernel took its pv page then (so it restores with --trap=pv only), and any other
  // was booted untrapped (so patch and hw-gd are installed over it at restore, as at
  // boot: the sites still hold their instructions, the hardware the guest's registers).
  const bool saved_pv = header.trap == TrapMechanismName(TrapMechanism::kPv);
  if (saved_pv != (config.trap == TrapMechanism::kPv)) {
    return refuse(saved_pv ? std::string("holds a kernel booted with --trap=pv (it took its pv "
                                         "page at boot): restore it with --trap=pv")
                           : absl::StrFormat("holds a kernel booted without a pv page; --trap=%s "
                                             "needs one from boot: take the snapshot with "
                                             "--trap=pv",
                                             TrapMechanismName(config.trap)));
  }
  // The step tracer (`trace --restore`) starts at a phase's BEGIN marker, long after
  // the restore, and reads only the running guest; the injector and the gdb stub
  // start from the boot.
  const bool only_the_tracer = config.interceptors.empty() || config.interceptors_trace_only;
  if (config.injection_events || !only_the_tracer) {
    return refuse(
        "cannot be restored with --inject or --gdb yet: its kernel was booted without "
        "fault injection's reports, and they read the boot protocol; boot instead");
  }
  return std::unique_ptr<Board>(
      new SigvisorBoard(config, image.smp_max_cpus() > 0, restored.saved));
}

SigvisorBoard::SigvisorBoard(const MachineConfig& config, bool smp_kernel,
                             std::shared_ptr<const SavedVm> restoring)
    : cmdline_(config.cmdline),
      boot_flags_((config.cpl0_emulated ? SIGVISOR_BOOT_CPL0_EMULATED : 0u) |
                  (config.injection_events ? SIGVISOR_BOOT_INJECT_EVENTS : 0u)),
      pv_page_gpa_(config.trap == TrapMechanism::kPv ? kPvPageGpa : 0),
      vcpus_(config.vcpus),
      smp_kernel_(smp_kernel),
      ipi_(config.vcpus > 1 ? IpiMethodAbi(IpiMethodOf(config)) : SIGVISOR_IPI_NONE),
      check_signal_frames_(config.check_signal_frames),
      restoring_(std::move(restoring)) {}

absl::StatusOr<GuestMemory> SigvisorBoard::CreateMemory(uint64_t bytes) {
  if (!restoring_) return GuestMemory::Create(bytes);
  return MapSavedMemory(*restoring_);
}

absl::StatusOr<std::string> SigvisorBoard::Load(const ElfImage& image, GuestMemory& memory,
                                                KvmVcpu& vcpu,
                                                std::span<const kvm_cpuid_entry2> cpuid) {
  if (restoring_) {
    // The saved CPUID, which must be this host's: set before the first KVM_RUN, and
    // before the MSRs it gates.
    if (absl::Status s = CheckSameCpuid(*restoring_, cpuid); !s.ok()) return s;
    if (absl::Status s = vcpu.SetCpuid(restoring_->cpuid); !s.ok()) return s;
    if (absl::Status s = RestoreVcpu(vcpu, restoring_->vcpu); !s.ok()) return s;
    return cmdline_;
  }
  if (absl::Status s = LoadElfImage(image, memory); !s.ok()) return s;
  if (absl::Status s = WriteBootTables(memory); !s.ok()) return s;
  const BootInfoParams boot_info = {.image_end = image.load_end(),
                                    .flags = boot_flags_,
                                    .cmdline = cmdline_,
                                    .pv_page_gpa = pv_page_gpa_,
                                    .cpus = static_cast<uint32_t>(vcpus_),
                                    .ipi = ipi_};
  if (absl::Status s = WriteBootInfo(memory, kBootInfoGpa, boot_info); !s.ok()) return s;
  if (absl::Status s = SetUpVcpu(vcpu, image.entry(), kBootInfoGpa, cpuid); !s.ok()) return s;
  return cmdline_;
}

std::vector<kvm_cpuid_entry2> SigvisorBoard::Cpuid(
    std::span<const kvm_cpuid_entry2> supported) const {
  std::vector<kvm_cpuid_entry2> entries(supported.begin(), supported.end());
  if (vcpus_ > 1) {
    constexpr uint32_t kX2apic = 1u << 21;  // leaf 1 ECX: the guest may use x2APIC mode
    for (kvm_cpuid_entry2& e : entries) {
      if (e.function == 1) e.ecx |= kX2apic;
    }
  }
  return entries;
}

absl::Status SigvisorBoard::Attach(const BoardWiring& wiring) {
  // The guest protocol takes the hypercalls no interceptor registered for.
  guest_protocol_.emplace(wiring.memory, wiring.console);
  guest_protocol_->set_orders(cmdline_);  // the kernel asks for them once booted
  // An SMP build's markers carry its IPI counts, on any number of vCPUs.
  guest_protocol_->set_marker_ipi_cpus(smp_kernel_ ? vcpus_ : 0);
  if (wiring.at_quiescent_point) {
    guest_protocol_->set_quiescent_hook(
        [this, save = wiring.at_quiescent_point](uint32_t args_gpa) {
          orders_gpa_ = args_gpa;  // SaveDevices() keeps it
          return save(args_gpa);
        });
  }
  if (absl::Status s = guest_protocol_->Register(wiring.hypercalls); !s.ok()) return s;
  // Stateless between calls but for a pending check, so nothing of it is saved: a
  // snapshot is taken before any user task exists.
  pv_signal_frames_.emplace(wiring.memory, check_signal_frames_);
  if (absl::Status s = pv_signal_frames_->Register(wiring.hypercalls); !s.ok()) return s;
  // The SMP calls: served on several vCPUs, and refused as the guest's error on one.
  if (wiring.smp != nullptr) {
    smp_hypercalls_.emplace(wiring.memory, *wiring.smp, vcpus_);
    if (absl::Status s = smp_hypercalls_->Register(wiring.hypercalls); !s.ok()) return s;
  }
  serial_.emplace(wiring.console);
  hypercall_ports_.emplace(wiring.hypercalls);
  if (restoring_) {
    if (absl::Status s = RestoreDevices(); !s.ok()) return s;
  }
  for (absl::Status s : {
           wiring.bus.Register(AddressSpace::kPort, kSerialPort, Serial16550::kPortCount,
                               &*serial_),
           wiring.bus.Register(AddressSpace::kPort, kDebugExitPort, DebugExit::kPortCount,
                               &debug_exit_),
           wiring.bus.Register(AddressSpace::kPort, SIGVISOR_HC_PORT_BASE,
                               HypercallDevice::kPortCount, &*hypercall_ports_),
       }) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::optional<SignalFrameCounts> SigvisorBoard::signal_frames() const {
  if (!pv_signal_frames_ || !pv_signal_frames_->counts().any()) return std::nullopt;
  return pv_signal_frames_->counts();
}

namespace {
constexpr char kSerialPart[] = "serial";
constexpr char kOrdersPart[] = "orders";
}  // namespace

absl::StatusOr<std::vector<SnapshotPart>> SigvisorBoard::SaveDevices() const {
  if (!serial_ || orders_gpa_ == 0) {
    return absl::FailedPreconditionError("the guest has not reached its quiescent point");
  }
  PartWriter serial(kSerialPart);
  serial.PutStruct(serial_->SaveState());
  PartWriter orders(kOrdersPart);
  orders.PutU32(orders_gpa_);
  std::vector<SnapshotPart> parts;
  parts.push_back(std::move(serial).Finish());
  parts.push_back(std::move(orders).Finish());
  return parts;
}

// The devices as they were saved, and the guest's waiting request answered with this
// run's orders: it reads them as soon as it runs.
absl::Status SigvisorBoard::RestoreDevices() {
  absl::StatusOr<const SnapshotPart*> serial = DevicePart(*restoring_, kSerialPart);
  if (!serial.ok()) return serial.status();
  PartReader serial_in(**serial);
  const Serial16550::State state = serial_in.GetStruct<Serial16550::State>("serial state");
  if (absl::Status s = serial_in.Done(); !s.ok()) return s;
  serial_->RestoreState(state);
  absl::StatusOr<const SnapshotPart*> orders = DevicePart(*restoring_, kOrdersPart);
  if (!orders.ok()) return orders.status();
  PartReader orders_in(**orders);
  orders_gpa_ = orders_in.GetU32();
  if (absl::Status s = orders_in.Done(); !s.ok()) return s;
  return guest_protocol_->AnswerOrders(orders_gpa_);
}

}  // namespace sigvisor::x86
