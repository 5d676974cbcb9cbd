#include "arch/x86_64/vmm/machine/x86_machine.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/cpu/cpl0_completion.h"
#include "arch/x86_64/vmm/cpu/kvm_backend.h"
#include "arch/x86_64/vmm/cpu/local_apic.h"
#include "arch/x86_64/vmm/cpu/local_apic_devices.h"
#include "arch/x86_64/vmm/cpu/page_walk.h"
#include "arch/x86_64/vmm/cpu/phase_interrupt_block.h"
#include "arch/x86_64/vmm/cpu/syscall_completion.h"
#include "arch/x86_64/vmm/cpu/vcpu_snapshot.h"
#include "arch/x86_64/vmm/machine/ap_runner.h"
#include "arch/x86_64/vmm/machine/board.h"
#include "arch/x86_64/vmm/machine/boot_layout.h"
#include "arch/x86_64/vmm/machine/port_io_site.h"
#include "arch/x86_64/vmm/machine/saved_vm.h"
#include "arch/x86_64/vmm/machine/smp_boot.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/base/clock.h"
#include "vmm/machine/bus.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor::x86 {
namespace {

// Intel VMX wants a 3-page TSS region for real-mode emulation; out of RAM's way.
constexpr uint64_t kVmxTssGpa = 0xfffbd000;

// The SMP hypercalls' machine: the APs' runner and the local APICs, KVM's in-kernel
// ones or the VMM's (`apics`). Calls come on the calling vCPU's thread (smp_boot.h).
class KvmSmpMachine : public SmpMachine {
 public:
  KvmSmpMachine(KvmVm& vm, VcpuState& bsp, std::optional<ApRunner>& aps, LocalApics* apics)
      : vm_(vm), bsp_(bsp), aps_(aps), apics_(apics) {}

  int CallingVcpu() const override { return aps_ ? aps_->CallingVcpu() : 0; }
  // vCPU 0's: CPU_UP is served on its thread only.
  absl::StatusOr<kvm_sregs> CallerSregs() override { return bsp_.GetSregs(); }
  absl::Status StartAp(int cpu, const ApEntry& entry) override {
    if (!aps_) return absl::FailedPreconditionError("the machine has no APs");
    return aps_->StartAp(cpu, entry);
  }
  // Fixed delivery, edge, physical destination = APIC ID `cpu` (vCPU n has APIC ID n).
  absl::StatusOr<bool> SignalIpi(int cpu, uint32_t vector) override {
    if (apics_ != nullptr) return apics_->Post(cpu, static_cast<uint8_t>(vector));
    return vm_.SignalMsi(SIGVISOR_XAPIC_GPA | (static_cast<uint64_t>(cpu) << 12), vector);
  }

 private:
  KvmVm& vm_;
  VcpuState& bsp_;
  std::optional<ApRunner>& aps_;
  LocalApics* apics_;
};

// `run --lapic vmm` on an SMP machine: the local APICs are the VMM's, not KVM's.
bool HasVmmLapics(const MachineConfig& config) {
  return config.vcpus > 1 && config.lapic == Lapic::kVmm;
}

// IA32_APIC_BASE as after reset: the local APIC enabled, in xAPIC mode, at its usual
// page; vCPU 0 the bootstrap processor. KVM keeps the MSR as a plain value on a vCPU
// made without its irqchip, and that value starts at 0 (disabled), from which the guest
// could not switch to x2APIC mode: the VMM's local APIC needs it set.
absl::Status ResetApicBase(KvmVcpu& vcpu, bool bootstrap) {
  constexpr uint64_t kApicBaseBsp = 1u << 8;
  constexpr uint64_t kApicBaseEnable = 1u << 11;
  absl::StatusOr<kvm_sregs> sregs = vcpu.GetSregs();
  if (!sregs.ok()) return sregs.status();
  sregs->apic_base = SIGVISOR_XAPIC_GPA | kApicBaseEnable | (bootstrap ? kApicBaseBsp : 0);
  return vcpu.SetSregs(*sregs);
}

// The VMM's local APICs: the x2APIC's MSRs, which KVM refuses without its own APIC
// (an "invalid" MSR access), come to the VMM instead of raising #GP in the guest; so does
// any other MSR KVM does not know or refuses, which then ends the run as an access to
// something the machine lacks.
absl::Status HandMsrsToVmm(KvmVm& vm) {
  return vm.EnableCap(KVM_CAP_X86_USER_SPACE_MSR,
                      KVM_MSR_EXIT_REASON_INVAL | KVM_MSR_EXIT_REASON_UNKNOWN);
}

// "rip 0x100123 (kernel_main+0x13, cpl 0) bytes cc 90 ..." for a diagnosis.
std::string Describe(const GuestMemory& memory, const ElfImage& image, const CpuLocation& where) {
  auto read = [&](uint64_t address, size_t n) {
    if (where.paging) return ReadGuestVirtual(memory, where.page_table_root, address, n);
    std::vector<uint8_t> bytes(n);  // paging off (a Multiboot kernel's entry state)
    if (!memory.Read(address, bytes).ok()) bytes.clear();
    return bytes;
  };
  // After port I/O, the instruction that made the access, wherever KVM left rip.
  const uint64_t rip =
      where.port_io ? PortIoInstructionAddress(where.pc, *where.port_io, read) : where.pc;
  const std::vector<uint8_t> bytes = read(rip, 8);
  std::vector<std::string> hex;
  for (uint8_t b : bytes) hex.push_back(absl::StrFormat("%02x", b));
  std::string text = absl::StrFormat("rip %#x (%s, cpl %d)", rip, image.symbols().Symbolize(rip),
                                     where.cpl);
  text += bytes.empty() ? " (bytes not readable)" : " bytes " + absl::StrJoin(hex, " ");
  if (rip != where.pc) text += absl::StrFormat(" (KVM had already moved rip past it, to %#x)", where.pc);
  return text;
}

// Registers, segment registers and events in the kvm_run page (a trap then needs no
// ioctl for them).
bool SyncRegsAvailable(const KvmSystem& kvm) {
  constexpr int kNeeded = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS | KVM_SYNC_X86_EVENTS;
  return (kvm.CheckExtension(KVM_CAP_SYNC_REGS) & kNeeded) == kNeeded;
}

// vCPU 0's CPUID on a machine of `vcpus` for `board`, from what KVM supports: what a VM
// gets (CreateVm) and what a restore compares its snapshot's with (CheckRestore).
std::vector<kvm_cpuid_entry2> BootCpuid(const Board& board,
                                        std::span<const kvm_cpuid_entry2> supported, int vcpus) {
  return VcpuCpuid(board.Cpuid(supported), 0, vcpus);
}

// The KVM objects of one run, made in the order KVM wants them: the VM, its RAM, the
// in-kernel devices the board asks for, vCPU 0 and the APs (with the in-kernel
// irqchip KVM creates them in mp_state UNINITIALIZED, waiting for INIT/SIPI: only
// CPUID is set for them here, the SIPI gives them the rest).
struct VmParts {
  KvmVm vm;
  GuestMemory memory;
  KvmVcpu vcpu;
  std::vector<KvmVcpu> aps;
  std::vector<kvm_cpuid_entry2> cpuid;  // vCPU 0's
  bool exception_payload = false;       // KVM_CAP_EXCEPTION_PAYLOAD enabled
  bool irqchip = false;                 // KVM's in-kernel LAPICs, IOAPIC and PICs
  bool pit = false;                     // KVM's in-kernel PIT
};

absl::StatusOr<VmParts> CreateVm(const KvmSystem& kvm, const MachineConfig& config,
                                 Board& board) {
  absl::StatusOr<KvmVm> vm = kvm.CreateVm();
  if (!vm.ok()) return vm.status();
  absl::StatusOr<GuestMemory> memory = board.CreateMemory(config.memory_bytes);
  if (!memory.ok()) return memory.status();
  if (absl::Status s = vm->SetMemoryRegion(0, 0, memory->size(), memory->host_base()); !s.ok()) {
    return s;
  }
  if (absl::Status s = vm->SetTssAddr(kVmxTssGpa); !s.ok()) return s;
  // Fault injection raises #PF with its CR2 as an exception payload where KVM has
  // the capability (it must be enabled before the vCPU exists); else via SET_SREGS.
  const bool exception_payload =
      config.injection_events && kvm.CheckExtension(KVM_CAP_EXCEPTION_PAYLOAD) > 0 &&
      vm->EnableCap(KVM_CAP_EXCEPTION_PAYLOAD, 1).ok();
  const bool vmm_lapic = HasVmmLapics(config);
  const bool irqchip = board.in_kernel_irqchip() || (config.vcpus > 1 && !vmm_lapic);
  if (irqchip) {
    if (absl::Status s = vm->CreateIrqchip(); !s.ok()) return s;
  }
  if (vmm_lapic) {
    if (absl::Status s = HandMsrsToVmm(*vm); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "--lapic vmm needs the x2APIC's MSRs handed to the VMM (KVM_CAP_X86_USER_SPACE_MSR), "
          "which this host refuses (%s); give --lapic kvm",
          s.message()));
    }
  }
  if (board.in_kernel_pit()) {
    if (absl::Status s = vm->CreatePit(); !s.ok()) return s;
  }
  absl::StatusOr<KvmVcpu> vcpu = vm->CreateVcpu(0);
  if (!vcpu.ok()) return vcpu.status();
  if (vmm_lapic) {
    if (absl::Status s = ResetApicBase(*vcpu, /*bootstrap=*/true); !s.ok()) return s;
  }
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> supported = kvm.SupportedCpuid();
  if (!supported.ok()) return supported.status();
  const std::vector<kvm_cpuid_entry2> cpuid = BootCpuid(board, *supported, config.vcpus);
  std::vector<KvmVcpu> aps;
  for (int id = 1; id < config.vcpus; ++id) {
    absl::StatusOr<KvmVcpu> ap = vm->CreateVcpu(id);
    if (!ap.ok()) return ap.status();
    if (absl::Status s = ap->SetCpuid(VcpuCpuid(cpuid, id, config.vcpus)); !s.ok()) return s;
    if (vmm_lapic) {
      if (absl::Status s = ResetApicBase(*ap, /*bootstrap=*/false); !s.ok()) return s;
    }
    aps.push_back(*std::move(ap));
  }
  return VmParts{*std::move(vm),   *std::move(memory), *std::move(vcpu), std::move(aps),
                 std::move(cpuid), exception_payload,  irqchip,          board.in_kernel_pit()};
}

// What no board decides: the vCPU count and the size of RAM.
absl::Status CheckMachine(const MachineConfig& config) {
  if (config.vcpus < 1 || config.vcpus > kMaxVcpus) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--vcpus %d: give 1 to %d (vCPU 0 boots, the others wait for INIT/SIPI)",
        config.vcpus, kMaxVcpus));
  }
  return absl::OkStatus();
}

absl::Status CheckMemory(const MachineConfig& config) {
  if (config.memory_bytes > kMaxGuestMemory || config.memory_bytes < 2 * kImageMinGpa ||
      config.memory_bytes % (2ull << 20) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "guest memory of %d MiB: give 2 MiB to 1024 MiB in steps of 2 MiB",
        config.memory_bytes >> 20));
  }
  return absl::OkStatus();
}

// The run's interceptors, in the order they see exits: the trap engine first (it takes
// only its own sites' exits, and under hw-gd leaves the debug exits GuestDebug names as
// a debugger's or tracer's to them), then the run's own (tracer, gdb stub, injector),
// then what the host needs completed: where CPL0 is emulated, what the emulator cannot
// run but the VMM can complete exactly (int3 as #BP) behaves as on hardware KVM (last
// of the guest's: the gdb stub's own breakpoints are int3s it recognises first), and
// SYSCALL, which such a host leaves at CPL3, for a guest whose user space uses it (the
// bundled kernel's takes `int $0x80`, traps.c); then, with --block-phase-interrupts,
// the observer that blocks interrupts inside the phases; and the APs' stop last.
struct Completions {
  std::optional<Cpl0Completion> cpl0;
  std::optional<SyscallCompletion> syscall;
  std::optional<PhaseInterruptBlock> phase_interrupts;  // --block-phase-interrupts
};

void ChainInterceptors(const MachineConfig& config, const Board& board, VcpuState& state,
                       TrapEngine* traps,
                       const std::vector<std::unique_ptr<ExitInterceptor>>& own,
                       Completions& completions, SessionOptions& options) {
  options.interceptors.push_back(traps);
  for (const std::unique_ptr<ExitInterceptor>& interceptor : own) {
    options.interceptors.push_back(interceptor.get());
  }
  if (config.cpl0_emulated) options.interceptors.push_back(&completions.cpl0.emplace(state));
  if (config.cpl0_emulated && board.uses_syscall()) {
    options.interceptors.push_back(&completions.syscall.emplace(state));
    completions.syscall->Arm();  // a restored kernel's first SYSCALL may precede any exit
  }
  if (config.block_phase_interrupts) {
    options.interceptors.push_back(&completions.phase_interrupts.emplace(state.debug()));
  }
}

// The VM's in-kernel state where it has it, as the parts `RestoreInKernelDevices`
// reads back (kIrqchipPart, kPitPart, kClockPart: saved_vm.h): the PICs and the IOAPIC
// (KVM_GET_IRQCHIP), the PIT (KVM_GET_PIT2) and the KVM clock (KVM_GET_CLOCK).
absl::StatusOr<std::vector<SnapshotPart>> CaptureInKernelDevices(VmParts& vm) {
  std::vector<SnapshotPart> parts;
  if (!vm.irqchip) return parts;
  PartWriter irqchip(kIrqchipPart);
  for (uint32_t chip : {KVM_IRQCHIP_PIC_MASTER, KVM_IRQCHIP_PIC_SLAVE, KVM_IRQCHIP_IOAPIC}) {
    absl::StatusOr<kvm_irqchip> state = vm.vm.GetIrqchip(chip);
    if (!state.ok()) return state.status();
    irqchip.PutStruct(*state);
  }
  parts.push_back(std::move(irqchip).Finish());
  if (vm.pit) {
    absl::StatusOr<kvm_pit_state2> pit = vm.vm.GetPit();
    if (!pit.ok()) return pit.status();
    PartWriter out(kPitPart);
    out.PutStruct(*pit);
    parts.push_back(std::move(out).Finish());
  }
  absl::StatusOr<kvm_clock_data> clock = vm.vm.GetClock();
  if (!clock.ok()) return clock.status();
  PartWriter out(kClockPart);
  out.PutStruct(*clock);
  parts.push_back(std::move(out).Finish());
  return parts;
}

// Restoring, once the VM's in-kernel devices exist and before any vCPU's state (as
// Firecracker restores a VM before its vCPUs): the PIT, the KVM clock (the saved value,
// flags cleared), then the PIC master, the PIC slave and the IOAPIC.
absl::Status RestoreInKernelDevices(VmParts& vm, const SavedVm& saved) {
  if (!vm.irqchip) return absl::OkStatus();
  if (vm.pit) {
    absl::StatusOr<kvm_pit_state2> pit =
        ReadDevicePart<kvm_pit_state2>(saved, kPitPart, "kvm_pit_state2");
    if (!pit.ok()) return pit.status();
    if (absl::Status s = vm.vm.SetPit(*pit); !s.ok()) return s;
  }
  absl::StatusOr<kvm_clock_data> clock =
      ReadDevicePart<kvm_clock_data>(saved, kClockPart, "kvm_clock_data");
  if (!clock.ok()) return clock.status();
  absl::StatusOr<const SnapshotPart*> irqchip = DevicePart(saved, kIrqchipPart);
  if (!irqchip.ok()) return irqchip.status();
  PartReader irqchip_in(**irqchip);
  std::vector<kvm_irqchip> chips;
  for (int i = 0; i < 3; ++i) chips.push_back(irqchip_in.GetStruct<kvm_irqchip>("kvm_irqchip"));
  if (absl::Status s = irqchip_in.Done(); !s.ok()) return s;
  if (absl::Status s = vm.vm.SetClock(*clock); !s.ok()) return s;
  for (const kvm_irqchip& chip : chips) {
    if (absl::Status s = vm.vm.SetIrqchip(chip); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The APs' saved state into theirs (each has its CPUID: CreateVm), after vCPU 0's.
absl::Status RestoreAps(VmParts& vm, const SavedVm& saved) {
  if (saved.aps.size() != vm.aps.size()) {
    return absl::InternalError(
        absl::StrFormat("restoring %d APs into a VM of %d", saved.aps.size(), vm.aps.size()));
  }
  for (size_t i = 0; i < vm.aps.size(); ++i) {
    if (absl::Status s = RestoreVcpu(vm.aps[i], VcpuToRestore(saved, saved.aps[i])); !s.ok()) {
      return absl::Status(s.code(), absl::StrFormat("vCPU %d: %s", i + 1, s.message()));
    }
  }
  return absl::OkStatus();
}

// Whether a snapshot's vCPUs are read at the quiescent point's exit itself: where no
// AP runs then (one vCPU, or APs the guest starts by hypercall after its orders: the
// bundled kernel). A Linux guest's APs have run since its boot; they are read once the
// run has ended and ApRunner has stopped them, so that none runs on while it, vCPU 0's
// LAPIC (an IPI an AP sends lands there) or the irqchip is read.
bool ReadAtQuiescentExit(const VmParts& vm, const Board& board) {
  return vm.aps.empty() || board.aps_start_by_hypercall();
}

// `sigvisor snapshot` at the guest's quiescent point: each vCPU's port I/O completed (so
// that vCPU 0's saved rip is past the `out`), every vCPU, the VM's in-kernel devices and
// the board's read. Where the guest starts its APs by hypercall, none may have started
// yet: each then holds the state its VM gave it, read while its thread waits for its
// entry outside KVM_RUN; the VMM's own local APICs, which a snapshot does not hold, must
// be as at reset. Where the APs run (Linux) they have been stopped (ReadAtQuiescentExit).
// Only ioctls: this may run on the run loop's thread, inside its seccomp sandbox; the
// files are written once the run is over (WriteSavedVm), while the stopped guest's
// memory is still mapped.
absl::StatusOr<SavedVm> CaptureVm(const KvmSystem& kvm, VmParts& vm, const Board& board,
                                  const LocalApics* vmm_lapics, const MachineConfig& config,
                                  SnapshotHeader header, const std::string& kernel_cmdline) {
  if (!vm.aps.empty() && board.aps_start_by_hypercall()) {
    const SmpHypercalls* smp = board.smp_hypercalls();
    if (smp == nullptr) return absl::InternalError("APs started by hypercall without the calls");
    if (smp->aps_started() > 0) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the guest started %d AP(s) before its quiescent point", smp->aps_started()));
    }
  }
  if (vmm_lapics != nullptr) {
    for (int cpu = 0; cpu < vmm_lapics->vcpus(); ++cpu) {
      if (!vmm_lapics->AtReset(cpu)) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "the guest used vCPU %d's local APIC (the VMM's) before its quiescent point", cpu));
      }
    }
  }
  if (absl::Status s = vm.vcpu.CompletePendingIo(); !s.ok()) return s;
  const FpuAtQuiescentPoint fpu = board.fpu_at_quiescent_point();
  absl::StatusOr<VcpuSnapshot> vcpu = CaptureVcpu(kvm, vm.vcpu, vm.irqchip, fpu);
  if (!vcpu.ok()) return vcpu.status();
  std::vector<VcpuSnapshot> aps;
  for (size_t i = 0; i < vm.aps.size(); ++i) {
    // No task's FPU state is live in an AP's registers: the bundled kernel's APs have
    // not run; Linux's have run kernel threads only (init pins itself to CPU 0 before
    // its orders, and a user task leaving a CPU has its state saved to memory), whose
    // kernel-mode FPU use leaves the registers owned by no task. KVM's reset state then
    // serves (docs/snapshots.md, "The FPU").
    absl::Status io = vm.aps[i].CompletePendingIo();
    absl::StatusOr<VcpuSnapshot> ap =
        io.ok() ? CaptureVcpu(kvm, vm.aps[i], vm.irqchip, FpuAtQuiescentPoint::kReset)
                : absl::StatusOr<VcpuSnapshot>(io);
    if (!ap.ok()) {
      return absl::Status(ap.status().code(),
                          absl::StrFormat("vCPU %d: %s", i + 1, ap.status().message()));
    }
    aps.push_back(*std::move(ap));
  }
  absl::StatusOr<std::vector<SnapshotPart>> devices = board.SaveDevices();
  if (!devices.ok()) return devices.status();
  absl::StatusOr<std::vector<SnapshotPart>> in_kernel = CaptureInKernelDevices(vm);
  if (!in_kernel.ok()) return in_kernel.status();
  devices->insert(devices->end(), in_kernel->begin(), in_kernel->end());
  header.memory_bytes = vm.memory.size();
  header.vcpus = static_cast<uint32_t>(config.vcpus);
  // The IPI way and local APICs a restore must run: the bundled kernel's choice
  // (--ipi, --lapic); a Linux guest takes KVM's APICs and sends its own IPIs.
  if (config.vcpus > 1 && board.aps_start_by_hypercall()) {
    header.ipi = std::string(IpiMethodName(IpiMethodOf(config)));
    header.lapic = std::string(LapicName(LapicOf(config)));
  }
  header.trap = std::string(TrapMechanismName(config.trap));
  header.boot_cmdline = kernel_cmdline;
  return SavedVm{.dir = config.save_to,
                 .header = std::move(header),
                 .cpuid = vm.cpuid,
                 .vcpu = *std::move(vcpu),
                 .aps = std::move(aps),
                 .devices = *std::move(devices)};
}

// Each AP's exits, KVM's statistics of it and the IPIs the VMM delivered to it.
void AddOtherVcpus(const ApRunner& aps, const SmpHypercalls* smp, RunResult& result) {
  std::vector<std::pair<int, StatsSnapshot>> stats = aps.final_stats();
  std::vector<std::pair<int, ExitLedger>> ledgers = aps.per_vcpu_ledgers();
  for (size_t i = 0; i < ledgers.size(); ++i) {
    const int vcpu = ledgers[i].first;
    result.other_vcpus.push_back(
        VcpuRun{.vcpu = vcpu,
                .ledger = std::move(ledgers[i].second),
                .kvm_stats = i < stats.size() ? std::move(stats[i].second) : StatsSnapshot{},
                .ipis_delivered_by_vmm = smp != nullptr ? smp->ipis_delivered(vcpu) : 0});
  }
}

// The APs' ends folded into the BSP's result: how an AP ended the run, where each
// still was at a timeout, and the APs' exits. A guest that starts its APs the PC way
// (a Multiboot kernel, Linux) has them merged into its ledger, its one exit table
// (docs/guests.md); an SMP sigvisor kernel's ledger stays vCPU 0's, as its KVM
// statistics and phases are, and each AP's exits, KVM's statistics of it and the IPIs
// the VMM delivered to it are in other_vcpus (docs/smp.md).
void MergeAps(ApRunner& aps, const SmpHypercalls* smp, RunResult& result) {
  aps.Stop();  // stopped already when the session ended (the stopper): a no-op then
  if (aps.mode() == ApRunner::StartMode::kInitSipi) {
    result.ledger.Merge(aps.ledger());
  } else {
    AddOtherVcpus(aps, smp, result);
  }
  if (std::optional<ApRunner::End> end = aps.TakeEnd()) {
    result.outcome = end->outcome;
    result.exit_code = end->exit_code;
    result.diagnosis = end->diagnosis;
  }
  if (result.outcome == Outcome::kTimeout && !aps.locations().empty()) {
    result.diagnosis +=
        absl::StrFormat("; the other vCPUs then: %s", absl::StrJoin(aps.locations(), "; "));
  }
  if (result.outcome != Outcome::kExited && !aps.never_started().empty()) {
    result.warnings.push_back(absl::StrFormat(
        aps.mode() == ApRunner::StartMode::kHypercall
            ? "vCPU(s) %s never started: the guest made no cpu_up hypercall for them"
            : "vCPU(s) %s never started: the guest sent them no INIT/SIPI through its LAPIC",
        absl::StrJoin(aps.never_started(), ",")));
  }
}

}  // namespace

std::vector<kvm_cpuid_entry2> VcpuCpuid(std::span<const kvm_cpuid_entry2> board_cpuid, int id,
                                        int count) {
  std::vector<kvm_cpuid_entry2> entries(board_cpuid.begin(), board_cpuid.end());
  for (kvm_cpuid_entry2& e : entries) {
    if (e.function == 1) {
      e.ebx = (e.ebx & 0x0000ffffu) | (static_cast<uint32_t>(id) << 24) |
              (static_cast<uint32_t>(count) << 16);
      if (count > 1) e.edx |= 1u << 28;  // HTT: the count field is valid
    }
    if (e.function == 0xb || e.function == 0x1f) e.edx = static_cast<uint32_t>(id);
    if (e.function == 0x8000001e) e.eax = static_cast<uint32_t>(id);
  }
  return entries;
}
std::string_view LapicName(Lapic lapic) { return lapic == Lapic::kVmm ? "vmm" : "kvm"; }

IpiMethod IpiMethodOf(const MachineConfig& config) {
  return config.ipi.value_or(IpiMethod::kX2apic);
}

Lapic LapicOf(const MachineConfig& config) { return config.lapic.value_or(Lapic::kKvm); }

absl::Status TakeSavedMachine(const SnapshotHeader& header, MachineConfig& config) {
  config.vcpus = static_cast<int>(std::min<uint32_t>(header.vcpus, kMaxVcpus + 1));
  config.ipi.reset();
  config.lapic.reset();
  if (header.vcpus <= 1) return absl::OkStatus();
  if (header.ipi.empty() && header.lapic.empty()) return absl::OkStatus();  // Linux's
  absl::StatusOr<IpiMethod> ipi = ParseIpiMethod(header.ipi);
  absl::StatusOr<Lapic> lapic = ParseLapic(header.lapic);
  if (!ipi.ok() || !lapic.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the snapshot's machine names an IPI way '%s' and local APICs '%s' this build does "
        "not know",
        header.ipi, header.lapic));
  }
  config.ipi = *ipi;
  config.lapic = *lapic;
  return absl::OkStatus();
}

absl::StatusOr<Lapic> ParseLapic(std::string_view name) {
  for (Lapic lapic : {Lapic::kKvm, Lapic::kVmm}) {
    if (name == LapicName(lapic)) return lapic;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "--lapic '%s': give kvm (KVM's in-kernel local APIC) or vmm (sigvisor's own: the APIC "
      "accesses and halts exit to the VMM)",
      name));
}

std::string_view IpiMethodName(IpiMethod method) {
  switch (method) {
    case IpiMethod::kX2apic:
      return "x2apic";
    case IpiMethod::kXapic:
      return "xapic";
    case IpiMethod::kPv:
      return "pv";
  }
  return "x2apic";
}

absl::StatusOr<IpiMethod> ParseIpiMethod(std::string_view name) {
  for (IpiMethod method : {IpiMethod::kX2apic, IpiMethod::kXapic, IpiMethod::kPv}) {
    if (name == IpiMethodName(method)) return method;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "--ipi '%s': give x2apic (the ICR MSR), xapic (the ICR in MMIO) or pv (the VMM's "
      "send_ipi hypercall)",
      name));
}

uint32_t IpiMethodAbi(IpiMethod method) {
  switch (method) {
    case IpiMethod::kX2apic:
      return SIGVISOR_IPI_X2APIC;
    case IpiMethod::kXapic:
      return SIGVISOR_IPI_XAPIC;
    case IpiMethod::kPv:
      return SIGVISOR_IPI_PV;
  }
  return SIGVISOR_IPI_X2APIC;
}

absl::Status CheckMachineConfig(const ElfImage& image, const MachineConfig& config) {
  if (absl::Status s = CheckMachine(config); !s.ok()) return s;
  if (absl::Status s = MakeBoard(image, config).status(); !s.ok()) return s;
  return CheckMemory(config);
}

absl::Status CheckRestore(const KvmSystem& kvm, const ElfImage& image,
                          const MachineConfig& config) {
  const RestoredVm* restored = std::get_if<RestoredVm>(&config.target);
  if (restored == nullptr || restored->saved == nullptr) {
    return absl::InternalError("CheckRestore: the target is not a restored VM");
  }
  if (absl::Status s = CheckMachine(config); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Board>> board = MakeBoard(image, config);
  if (!board.ok()) return board.status();
  if (absl::Status s = CheckMemory(config); !s.ok()) return s;
  // The CPUID a VM of this board would give the guest here (CreateVm's).
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> supported = kvm.SupportedCpuid();
  if (!supported.ok()) return supported.status();
  const std::vector<kvm_cpuid_entry2> cpuid = BootCpuid(**board, *supported, config.vcpus);
  if (absl::Status s = CheckSameCpuid(*restored->saved, cpuid); !s.ok()) return s;
  return (*board)->CreateMemory(config.memory_bytes).status();
}

absl::StatusOr<MachineReport> BootAndRun(const KvmSystem& kvm, const ElfImage& image,
                                         const MachineConfig& config) {
  if (absl::Status s = CheckMachine(config); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Board>> board = MakeBoard(image, config);
  if (!board.ok()) return board.status();
  if (absl::Status s = CheckMemory(config); !s.ok()) return s;

  MachineReport report;
  report.protocol = ProtocolOf(config.target);
  report.restored = std::holds_alternative<RestoredVm>(config.target);
  const uint64_t create_start = MonotonicNs();
  absl::StatusOr<VmParts> vm = CreateVm(kvm, config, **board);
  if (!vm.ok()) return vm.status();
  report.vm_create_ns = MonotonicNs() - create_start;

  const uint64_t setup_start = MonotonicNs();
  if (image.load_end() > vm->memory.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the image needs guest memory up to %#x but the VM has %d MiB; raise --memory",
        image.load_end(), vm->memory.size() >> 20));
  }
  const RestoredVm* restored = std::get_if<RestoredVm>(&config.target);
  if (restored != nullptr && restored->saved == nullptr) {
    return absl::InternalError("a restored VM without its snapshot");
  }
  if (restored != nullptr) {
    if (absl::Status s = RestoreInKernelDevices(*vm, *restored->saved); !s.ok()) return s;
  }
  absl::StatusOr<std::string> cmdline = (*board)->Load(image, vm->memory, vm->vcpu, vm->cpuid);
  if (!cmdline.ok()) return cmdline.status();
  if (restored != nullptr) {
    if (absl::Status s = RestoreAps(*vm, *restored->saved); !s.ok()) return s;
  }
  report.kernel_cmdline = *std::move(cmdline);
  const bool sync_regs = SyncRegsAvailable(kvm);
  VcpuState state(vm->vcpu, vm->memory, sync_regs);
  std::unique_ptr<TrapEngine> traps;
  if (config.trap != TrapMechanism::kOff) {
    absl::StatusOr<std::unique_ptr<TrapEngine>> installed =
        TrapEngine::Install(config.trap, image, vm->memory, vm->vcpu, vm->cpuid, sync_regs,
                            &state.debug(), kPvPageGpa, report.restored);
    if (!installed.ok()) return installed.status();
    traps = *std::move(installed);
    report.trap_sites = traps->sites().size();
  }
  std::optional<StatsFd> stats;
  if (absl::StatusOr<StatsFd> opened = vm->vcpu.OpenStats(); opened.ok()) stats = std::move(*opened);
  KvmBackend backend(vm->vcpu, std::move(stats), &state);
  HypercallTable hypercalls;
  MachineContext context{image, state, backend, traps.get(), sync_regs, hypercalls};
  context.exception_payload = vm->exception_payload;
  context.cpl0_emulated = config.cpl0_emulated;
  // Deleting and re-adding the RAM slot zaps every shadow page built from it.
  context.flush_shadow_mmu = [&vm = vm->vm, &ram = vm->memory]() -> absl::Status {
    if (absl::Status s = vm.SetMemoryRegion(0, 0, 0, ram.host_base()); !s.ok()) return s;
    return vm.SetMemoryRegion(0, 0, ram.size(), ram.host_base());
  };
  std::vector<std::unique_ptr<ExitInterceptor>> interceptors;
  for (const InterceptorFactory& make : config.interceptors) {
    absl::StatusOr<std::unique_ptr<ExitInterceptor>> made = make(context);
    if (!made.ok()) return made.status();
    interceptors.push_back(*std::move(made));
  }
  report.setup_ns = MonotonicNs() - setup_start;

  SessionOptions options = config.session;
  if (config.check_clocks) {
    // The vCPU's own answer: asking a throwaway VM's cost a VM create (~1 ms) per run.
    // A host that cannot say leaves the rate unknown (0): no check, as before.
    absl::StatusOr<uint64_t> tsc_khz = vm->vcpu.TscKhz();
    options.guest_tsc_khz = tsc_khz.ok() ? *tsc_khz : 0;
  }
  options.describe = [&ram = vm->memory, &image](const CpuLocation& where) {
    return Describe(ram, image, where);
  };
  Completions completions;
  ChainInterceptors(config, **board, state, traps.get(), interceptors, completions, options);
  Bus bus;
  // --lapic vmm: every vCPU's local APIC, in the VMM.
  std::optional<LocalApics> vmm_lapics;
  if (HasVmmLapics(config)) {
    vmm_lapics.emplace(config.vcpus);
    backend.UseVmmLapic(*vmm_lapics, 0);
  }
  std::optional<ApRunner> ap_runner;
  if (!vm->aps.empty()) {
    ap_runner.emplace(vm->aps, bus, backend, options.describe, config.session.sandbox,
                      (*board)->aps_start_by_hypercall() ? ApRunner::StartMode::kHypercall
                                                         : ApRunner::StartMode::kInitSipi);
    // The stopper first: the APs stop before any interceptor's end and before the
    // session hands over its result (an AP's console output goes into it).
    options.interceptors.insert(options.interceptors.begin(), ap_runner->stopper());
    options.interceptors.push_back(ap_runner->interceptor());
    options.sample_other_vcpus = [&ap_runner] { return ap_runner->Sample(); };
    // A call from an AP is made on its thread: the table asks the runner whose it is.
    hypercalls.set_caller([&ap_runner] { return ap_runner->CallingVcpu(); });
    if (vmm_lapics) ap_runner->UseVmmLapics(*vmm_lapics);
  }
  KvmSmpMachine smp_machine(vm->vm, state, ap_runner, vmm_lapics ? &*vmm_lapics : nullptr);
  // The board's devices write to the session's console, and the session needs the
  // board's call gate: the gate is made first, the console reaches the session once
  // it exists (no device speaks before the first KVM_RUN).
  std::optional<Session> session;
  // The console is written under the bus's lock (the serial port and the hypercall
  // gate are devices on it), from vCPU 0's thread or an AP's.
  BoardWiring wiring{bus, vm->vm, vm->memory, state, hypercalls,
                     [&session](std::string_view text) { session->ConsoleWrite(text); }};
  wiring.smp = &smp_machine;
  uint64_t run_start_ns = 0;
  std::optional<SavedVm> captured;  // `sigvisor snapshot`: the VM read at its quiescent point
  // Its header, from the quiescent point's exit, where the VM is read after the run.
  std::optional<SnapshotHeader> capture_after_run;
  auto capture = [&](SnapshotHeader header) -> absl::Status {
    absl::StatusOr<SavedVm> vm_state =
        CaptureVm(kvm, *vm, **board, vmm_lapics ? &*vmm_lapics : nullptr, config, std::move(header),
                  report.kernel_cmdline);
    if (!vm_state.ok()) {
      return absl::Status(vm_state.status().code(),
                          absl::StrCat("reading the VM to save: ", vm_state.status().message()));
    }
    captured = *std::move(vm_state);
    return absl::OkStatus();
  };
  if (!config.save_to.empty()) {
    wiring.at_quiescent_point = [&](uint32_t) {
      SnapshotHeader header = config.save_header;
      header.vm_create_ns = report.vm_create_ns;
      header.boot_ns = MonotonicNs() - run_start_ns;  // to the quiescent point's exit
      if (!ReadAtQuiescentExit(*vm, **board)) {
        capture_after_run = std::move(header);
      } else if (absl::Status s = capture(std::move(header)); !s.ok()) {
        return HypercallResult::RunFailed(Outcome::kHostError, std::string(s.message()));
      }
      HypercallResult saved;
      saved.verdict = RunVerdict::kGuestEnded;
      saved.outcome = Outcome::kSaved;
      return saved;
    };
  }
  if (absl::Status s = (*board)->Attach(wiring); !s.ok()) return s;
  // The VMM's local APICs on the bus: the xAPIC page and the x2APIC's MSRs, each access
  // made to the APIC of the vCPU whose thread makes it.
  std::optional<LocalApicWindow> xapic_page;
  std::optional<LocalApicWindow> x2apic_msrs;
  if (vmm_lapics) {
    auto calling_vcpu = [&ap_runner] { return ap_runner->CallingVcpu(); };
    xapic_page.emplace(LocalApicWindow::Kind::kXapicPage, *vmm_lapics, calling_vcpu);
    x2apic_msrs.emplace(LocalApicWindow::Kind::kX2apicMsrs, *vmm_lapics, calling_vcpu);
    if (absl::Status s = bus.Register(AddressSpace::kMmio, SIGVISOR_XAPIC_GPA,
                                      LocalApicWindow::kXapicPageSize, &*xapic_page);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = bus.Register(AddressSpace::kMsr, LocalApicWindow::kX2apicFirstMsr,
                                      LocalApicWindow::kX2apicMsrCount, &*x2apic_msrs);
        !s.ok()) {
      return s;
    }
  }
  options.hypercalls = (*board)->gate();
  // An SMP sigvisor kernel's APs make the calls any CPU may through the gate. (A Linux
  // guest's marker gate reads vCPU 0's registers: an AP's access stays a device's.)
  if (ap_runner && (*board)->aps_start_by_hypercall()) ap_runner->set_gate((*board)->gate());
  session.emplace(backend, bus, options);

  if (ap_runner) ap_runner->Start();
  run_start_ns = MonotonicNs();
  report.result = session->Run();
  // The session's end stopped the APs (ApRunner's stopper): the VM holds still now.
  if (capture_after_run && report.result.outcome == Outcome::kSaved) {
    if (absl::Status s = capture(*std::move(capture_after_run)); !s.ok()) return s;
  }
  const SmpHypercalls* smp = (*board)->smp_hypercalls();
  if (ap_runner) MergeAps(*ap_runner, smp, report.result);
  if (config.vcpus > 1 && report.protocol == BootProtocol::kSigvisor) {
    report.ipi = IpiMethodOf(config);
    report.lapic = LapicOf(config);
  }
  if (smp != nullptr) {
    report.ipis_delivered_by_vmm = smp->ipis_delivered();
    report.ipis_blocked = smp->ipis_blocked();
    if (report.ipis_blocked > 0) {
      report.result.warnings.push_back(absl::StrFormat(
          "%d of the guest's send_ipi IPIs were not delivered: the target's LAPIC refused them "
          "(not enabled yet?)",
          report.ipis_blocked));
    }
  }
  if (report.result.outcome == Outcome::kExited && (*board)->exit_status()) {
    report.result.exit_code = *(*board)->exit_status();
  }
  report.signal_frames = (*board)->signal_frames();
  // What of guest RAM is in host memory now, before a snapshot's save reads it all.
  if (config.report_guest_memory) {
    if (absl::StatusOr<MemoryResidency> residency = ReadMemoryResidency(vm->memory.host_base());
        residency.ok()) {
      report.guest_memory = *residency;
    }
  }
  if (captured && report.result.outcome == Outcome::kSaved) {
    if (absl::Status s = WriteSavedVm(*captured, vm->memory); !s.ok()) return s;
    report.saved =
        MachineReport::Saved{.state_bytes = captured->state_bytes,
                             .memory_pages = captured->memory.touched_pages(),
                             .memory_disk_bytes = captured->memory_disk_bytes,
                             .fpu = FpuSource(captured->vcpu, (*board)->fpu_at_quiescent_point()),
                             .msrs_refused = captured->vcpu.msrs_refused};
  }
  return report;
}

}  // namespace sigvisor::x86
