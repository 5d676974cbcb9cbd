#include "arch/x86_64/vmm/machine/x86_machine.h"

#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "arch/x86_64/vmm/machine/ap_runner.h"
#include "arch/x86_64/vmm/machine/boot_layout.h"
#include "arch/x86_64/vmm/cpu/cpl0_completion.h"
#include "arch/x86_64/vmm/cpu/kvm_backend.h"
#include "arch/x86_64/vmm/machine/linux_board.h"
#include "arch/x86_64/vmm/machine/linux_boot.h"
#include "arch/x86_64/vmm/machine/linux_host_fit.h"
#include "arch/x86_64/vmm/machine/linux_marker_gate.h"
#include "arch/x86_64/vmm/machine/long_mode.h"
#include "arch/x86_64/vmm/cpu/page_walk.h"
#include "arch/x86_64/vmm/cpu/syscall_completion.h"
#include "arch/x86_64/vmm/machine/port_io_site.h"
#include "devices/pc/debug_exit.h"
#include "devices/pc/fw_cfg.h"
#include "devices/hypercall.h"
#include "devices/pc/pc_stubs.h"
#include "devices/serial16550.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/base/clock.h"
#include "vmm/loader/elf_loader.h"
#include "vmm/machine/bus.h"
#include "vmm/machine/boot_info.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/guest_protocol.h"

namespace sigvisor::x86 {
namespace {

// Intel VMX wants a 3-page TSS region for real-mode emulation; out of RAM's way.
constexpr uint64_t kVmxTssGpa = 0xfffbd000;

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
      where.port_io ? PortIoInstructionAddress(where.rip, *where.port_io, read) : where.rip;
  const std::vector<uint8_t> bytes = read(rip, 8);
  std::vector<std::string> hex;
  for (uint8_t b : bytes) hex.push_back(absl::StrFormat("%02x", b));
  std::string text = absl::StrFormat("rip %#x (%s, cpl %d)", rip, image.symbols().Symbolize(rip),
                                     where.cpl);
  text += bytes.empty() ? " (bytes not readable)" : " bytes " + absl::StrJoin(hex, " ");
  if (rip != where.rip) text += absl::StrFormat(" (KVM had already moved rip past it, to %#x)", where.rip);
  return text;
}

// Registers, segment registers and events in the kvm_run page (a trap then needs no
// ioctl for them).
bool SyncRegsAvailable(const KvmSystem& kvm) {
  constexpr int kNeeded = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS | KVM_SYNC_X86_EVENTS;
  return (kvm.CheckExtension(KVM_CAP_SYNC_REGS) & kNeeded) == kNeeded;
}

// Which boot protocol an image speaks: a Linux kernel is one the caller says is
// (MachineConfig::linux_kernel: the file was a bzImage or a vmlinux); an image with
// the sigvisor ABI note is a sigvisor image (whatever else it carries: sigvisor's own
// images also have a Multiboot header, for QEMU); one without it but with a Multiboot
// v1 header is a Multiboot kernel, which has no sigvisor ABI to check. Anything else
// is refused. Then what the protocol's machine cannot do is refused, by flag.
absl::StatusOr<BootProtocol> ChooseBootProtocol(const ElfImage& image,
                                                const MachineConfig& config) {
  if (config.linux_kernel) {
    if (config.trap != TrapMechanism::kOff) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--trap=%s is for sigvisor images (64-bit code scanned for trap sites); a Linux "
          "kernel runs with --trap=off",
          TrapMechanismName(config.trap)));
    }
    if (!config.modules.empty()) {
      return absl::InvalidArgumentError(
          "--module passes modules to a Multiboot kernel; a Linux kernel takes --initrd");
    }
    if (!config.interceptors.empty() && !config.interceptors_trace_only) {
      return absl::UnimplementedError(
          "the gdb stub and fault injection work on sigvisor images only; not on a Linux "
          "kernel");
    }
    return BootProtocol::kLinux;
  }
  const bool multiboot = !image.abi_version().has_value() && image.multiboot().has_value();
  if (!multiboot) {
    if (absl::Status s = CheckAbiVersion(image, SIGVISOR_ABI_VERSION); !s.ok()) {
      if (image.abi_version()) return s;
      return absl::Status(s.code(), absl::StrCat(s.message(),
                                                 "; nor is it a Multiboot kernel (no Multiboot "
                                                 "v1 header, magic 0x1BADB002, in its first "
                                                 "8 KiB)"));
    }
    if (!config.modules.empty()) {
      return absl::InvalidArgumentError(
          "--module passes modules to a Multiboot kernel; this is a sigvisor image");
    }
    if (config.irqchip) {
      return absl::InvalidArgumentError(
          "--irqchip is for Multiboot kernels; sigvisor images run without an in-kernel "
          "irqchip (their traps rely on hlt reaching the VMM)");
    }
    if (config.vcpus != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--vcpus %d is for Multiboot kernels; sigvisor images run on one vCPU",
          config.vcpus));
    }
    return BootProtocol::kSigvisor;
  }
  if (config.trap != TrapMechanism::kOff) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--trap=%s is for sigvisor images (64-bit code scanned for trap sites); a Multiboot "
        "kernel runs with --trap=off",
        TrapMechanismName(config.trap)));
  }
  if (!config.interceptors.empty()) {
    return absl::UnimplementedError(
        "the tracer and the gdb stub work on sigvisor images only; not on a Multiboot kernel");
  }
  return BootProtocol::kMultiboot;
}

// The Linux kernel's boot state: zero page (or PVH start info), command line, initrd,
// MP table, page tables, and the vCPU at its 64-bit (or PVH) entry with the local APIC
// in virtual-wire mode.
absl::Status SetUpLinux(const ElfImage& image, const LinuxKernel& kernel,
                        const std::string& cmdline, int vcpus, GuestMemory& memory,
                        KvmVcpu& vcpu, std::span<const kvm_cpuid_entry2> cpuid) {
  LinuxBootParams params;
  params.setup_header = kernel.setup_header;
  params.cmdline = cmdline;
  params.initrd = kernel.initrd;
  params.kernel_load_begin = image.load_begin();
  params.kernel_init_size =
      std::max<uint64_t>(kernel.init_size, image.load_end() - image.load_begin());
  params.cmdline_size = kernel.cmdline_size;
  params.initrd_addr_max = kernel.initrd_addr_max;
  params.vcpus = vcpus;
  if (kernel.pvh) {
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
  SetLinuxLapicLints(*lapic);
  return vcpu.SetLapic(*lapic);
}

// KVM_GET_SUPPORTED_CPUID leaves with vCPU `id`'s initial APIC ID (leaf 1 EBX[31:24],
// leaf 0xB EDX), which KVM leaves to the VMM; leaf 1 EBX[23:16] gives the CPU count.
std::vector<kvm_cpuid_entry2> CpuidFor(std::span<const kvm_cpuid_entry2> supported, int id,
                                       int count) {
  std::vector<kvm_cpuid_entry2> entries(supported.begin(), supported.end());
  for (kvm_cpuid_entry2& e : entries) {
    if (e.function == 1) {
      e.ebx = (e.ebx & 0x0000ffffu) | (static_cast<uint32_t>(id) << 24) |
              (static_cast<uint32_t>(count) << 16);
      if (count > 1) e.edx |= 1u << 28;  // HTT: the count field is valid
    }
    if (e.function == 0xb) e.edx = static_cast<uint32_t>(id);
  }
  return entries;
}

}  // namespace

absl::StatusOr<MachineReport> BootAndRun(const KvmSystem& kvm, const ElfImage& image,
                                         const MachineConfig& config) {
  if (config.vcpus < 1 || config.vcpus > kMaxVcpus) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--vcpus %d: give 1 to %d (vCPU 0 boots, the others wait for INIT/SIPI)",
        config.vcpus, kMaxVcpus));
  }
  absl::StatusOr<BootProtocol> protocol = ChooseBootProtocol(image, config);
  if (!protocol.ok()) return protocol.status();
  const bool multiboot = *protocol == BootProtocol::kMultiboot;
  const bool linux_kernel = *protocol == BootProtocol::kLinux;
  if (!multiboot && image.load_begin() < kImageMinGpa) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the image loads at %#x, below %#x where sigvisor keeps the boot page tables; link "
        "it at 1 MiB or above",
        image.load_begin(), kImageMinGpa));
  }
  if (config.memory_bytes > kMaxGuestMemory || config.memory_bytes < 2 * kImageMinGpa ||
      config.memory_bytes % (2ull << 20) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "guest memory of %d MiB: give 2 MiB to 1024 MiB in steps of 2 MiB",
        config.memory_bytes >> 20));
  }

  MachineReport report;
  const uint64_t create_start = MonotonicNs();
  absl::StatusOr<KvmVm> vm = kvm.CreateVm();
  if (!vm.ok()) return vm.status();
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(config.memory_bytes);
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
  // APs need the LAPIC's INIT/SIPI; Linux its timers and interrupt controllers.
  const bool irqchip = config.irqchip || config.vcpus > 1 || linux_kernel;
  if (irqchip) {
    if (absl::Status s = vm->CreateIrqchip(); !s.ok()) return s;
  }
  if (linux_kernel) {
    if (absl::Status s = vm->CreatePit(); !s.ok()) return s;
  }
  absl::StatusOr<KvmVcpu> vcpu = vm->CreateVcpu(0);
  if (!vcpu.ok()) return vcpu.status();
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> cpuid = kvm.SupportedCpuid();
  if (!cpuid.ok()) return cpuid.status();
  if (linux_kernel) *cpuid = LinuxCpuid(*cpuid, config.cpl0_emulated);
  if (config.vcpus > 1) *cpuid = CpuidFor(*cpuid, 0, config.vcpus);
  // The APs: with the in-kernel irqchip KVM creates them in mp_state UNINITIALIZED,
  // waiting for INIT/SIPI; only CPUID is set here (the SIPI gives them their state).
  std::vector<KvmVcpu> aps;
  for (int id = 1; id < config.vcpus; ++id) {
    absl::StatusOr<KvmVcpu> ap = vm->CreateVcpu(id);
    if (!ap.ok()) return ap.status();
    if (absl::Status s = ap->SetCpuid(CpuidFor(*cpuid, id, config.vcpus)); !s.ok()) return s;
    aps.push_back(*std::move(ap));
  }
  report.vm_create_ns = MonotonicNs() - create_start;

  const uint64_t setup_start = MonotonicNs();
  if (image.load_end() > memory->size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the image needs guest memory up to %#x but the VM has %d MiB; raise --memory",
        image.load_end(), memory->size() >> 20));
  }
  report.protocol = *protocol;
  report.kernel_cmdline = config.cmdline;
  if (linux_kernel) {
    if (absl::Status s = LoadElfImage(image, *memory); !s.ok()) return s;
    absl::StatusOr<uint64_t> tsc_khz = vcpu->TscKhz();
    report.kernel_cmdline = LinuxBaseCmdline(config.cpl0_emulated, tsc_khz.ok() ? *tsc_khz : 0);
    if (!config.cmdline.empty()) absl::StrAppend(&report.kernel_cmdline, " ", config.cmdline);
    if (absl::Status s = SetUpLinux(image, *config.linux_kernel, report.kernel_cmdline,
                                    config.vcpus, *memory, *vcpu, *cpuid);
        !s.ok()) {
      return s;
    }
  } else if (multiboot) {
    if (absl::Status s = LoadElfImage(image, *memory); !s.ok()) return s;
    const std::string cmdline = config.image_name.empty()
                                    ? config.cmdline
                                    : absl::StrCat(config.image_name, " ", config.cmdline);
    if (absl::Status s = WriteMultibootState(*memory, image, cmdline, config.modules); !s.ok()) {
      return s;
    }
    if (absl::Status s = SetUpMultibootVcpu(*vcpu, image.entry(), *cpuid); !s.ok()) return s;
  } else {
    if (absl::Status s = LoadElfImage(image, *memory); !s.ok()) return s;
    if (absl::Status s = WriteBootTables(*memory); !s.ok()) return s;
    const BootInfoParams boot_info = {
        .image_end = image.load_end(),
        .flags = (config.cpl0_emulated ? SIGVISOR_BOOT_CPL0_EMULATED : 0u) |
                 (config.injection_events ? SIGVISOR_BOOT_INJECT_EVENTS : 0u),
        .cmdline = config.cmdline,
        .pv_page_gpa = config.trap == TrapMechanism::kPv ? kPvPageGpa : 0};
    if (absl::Status s = WriteBootInfo(*memory, kBootInfoGpa, boot_info); !s.ok()) return s;
    if (absl::Status s = SetUpVcpu(*vcpu, image.entry(), kBootInfoGpa, *cpuid); !s.ok()) return s;
  }
  const bool sync_regs = SyncRegsAvailable(kvm);
  VcpuState state(*vcpu, *memory, sync_regs);
  std::unique_ptr<TrapEngine> traps;
  if (config.trap != TrapMechanism::kOff) {
    absl::StatusOr<std::unique_ptr<TrapEngine>> installed =
        TrapEngine::Install(config.trap, image, *memory, *vcpu, *cpuid, sync_regs, &state.debug(),
                            kPvPageGpa);
    if (!installed.ok()) return installed.status();
    traps = *std::move(installed);
    report.trap_sites = traps->sites().size();
  }
  std::optional<StatsFd> stats;
  if (absl::StatusOr<StatsFd> opened = vcpu->OpenStats(); opened.ok()) stats = std::move(*opened);

  KvmBackend backend(*vcpu, std::move(stats), &state);
  HypercallTable hypercalls;
  MachineContext context{image, state, backend, traps.get(), sync_regs, hypercalls};
  context.exception_payload = exception_payload;
  context.cpl0_emulated = config.cpl0_emulated;
  // Deleting and re-adding the RAM slot zaps every shadow page built from it.
  context.flush_shadow_mmu = [&vm = *vm, &ram = *memory]() -> absl::Status {
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
    absl::StatusOr<uint64_t> tsc_khz = vcpu->TscKhz();
    options.guest_tsc_khz = tsc_khz.ok() ? *tsc_khz : 0;
  }
  const GuestMemory& ram = *memory;
  options.describe = [&ram, &image](const CpuLocation& where) {
    return Describe(ram, image, where);
  };
  // The trap engine first: it takes only its own sites' exits (and, under hw-gd,
  // leaves the debug exits GuestDebug names as a debugger's or tracer's to them).
  options.interceptors.push_back(traps.get());
  for (const std::unique_ptr<ExitInterceptor>& interceptor : interceptors) {
    options.interceptors.push_back(interceptor.get());
  }
  // Where CPL0 is emulated, what the emulator cannot run but the VMM can complete
  // exactly (int3 as #BP) behaves as on hardware KVM. Last: the gdb stub's own
  // breakpoints are int3s it recognises first.
  std::optional<Cpl0Completion> cpl0_completion;
  if (config.cpl0_emulated) options.interceptors.push_back(&cpl0_completion.emplace(state));
  // And SYSCALL, which such a host leaves at CPL3: Linux's user space makes system
  // calls with it (the bundled kernel's take `int $0x80`, traps.c).
  std::optional<SyscallCompletion> syscall_completion;
  if (config.cpl0_emulated && linux_kernel) {
    options.interceptors.push_back(&syscall_completion.emplace(state));
  }
  Bus bus;
  std::optional<ApRunner> ap_runner;
  if (!aps.empty()) {
    ap_runner.emplace(aps, bus, backend, options.describe, config.session.sandbox);
    options.interceptors.push_back(ap_runner->interceptor());
  }
  // Only sigvisor images make sigvisor hypercalls: elsewhere port 0x500 is nothing's.
  HypercallDevice hypercall_ports(hypercalls);
  LinuxMarkerGate linux_markers(state);
  if (*protocol == BootProtocol::kSigvisor) options.hypercalls = &hypercall_ports;
  if (linux_kernel) options.hypercalls = &linux_markers;
  Session session(backend, bus, options);
  auto console = [&session](std::string_view text) { session.ConsoleWrite(text); };
  GuestProtocol guest_protocol(*memory, console);
  if (absl::Status s = guest_protocol.Register(hypercalls); !s.ok()) return s;
  Serial16550 serial(console);
  DebugExit debug_exit;
  // A Multiboot kernel gets QEMU's PC devices instead of the hypercall port.
  FwCfg fw_cfg(memory->size(), static_cast<uint16_t>(config.vcpus));
  PicMasks pic_master, pic_slave;
  PciAbsent pci;
  LinuxBoard linux_board(*vm, memory->size(), console);
  std::vector<absl::Status> registered;
  if (linux_kernel) {
    registered.push_back(linux_board.Register(bus));
    registered.push_back(bus.Register(AddressSpace::kPort, SIGVISOR_LINUX_MARKER_PORT,
                                      LinuxMarkerGate::kPortCount, &linux_markers));
  } else {
    registered.push_back(
        bus.Register(AddressSpace::kPort, kSerialPort, Serial16550::kPortCount, &serial));
    registered.push_back(
        bus.Register(AddressSpace::kPort, kDebugExitPort, DebugExit::kPortCount, &debug_exit));
  }
  if (multiboot) {
    registered.push_back(
        bus.Register(AddressSpace::kPort, FwCfg::kPortBase, FwCfg::kPortCount, &fw_cfg));
    if (!irqchip) {  // else KVM's own PICs answer these ports
      registered.push_back(
          bus.Register(AddressSpace::kPort, kPicMasterPort, PicMasks::kPortCount, &pic_master));
      registered.push_back(
          bus.Register(AddressSpace::kPort, kPicSlavePort, PicMasks::kPortCount, &pic_slave));
    }
    registered.push_back(
        bus.Register(AddressSpace::kPort, PciAbsent::kPortBase, PciAbsent::kPortCount, &pci));
  } else if (*protocol == BootProtocol::kSigvisor) {
    registered.push_back(bus.Register(AddressSpace::kPort, SIGVISOR_HC_PORT_BASE,
                                      HypercallDevice::kPortCount, &hypercall_ports));
  }
  for (const absl::Status& s : registered) {
    if (!s.ok()) return s;
  }

  if (ap_runner) ap_runner->Start();
  report.result = session.Run();
  if (ap_runner) {
    ap_runner->Stop();
    report.result.ledger.Merge(ap_runner->ledger());
    if (std::optional<ApRunner::End> end = ap_runner->TakeEnd()) {
      report.result.outcome = end->outcome;
      report.result.exit_code = end->exit_code;
      report.result.diagnosis = end->diagnosis;
    }
    if (report.result.outcome != Outcome::kExited && !ap_runner->never_started().empty()) {
      report.result.warnings.push_back(absl::StrFormat(
          "vCPU(s) %s never started: the guest sent them no INIT/SIPI through its LAPIC",
          absl::StrJoin(ap_runner->never_started(), ",")));
    }
  }
  const DebugExit& exit_device = linux_kernel ? linux_board.debug_exit() : debug_exit;
  if (report.result.outcome == Outcome::kExited && exit_device.exit_status()) {
    report.result.exit_code = *exit_device.exit_status();
  }
  return report;
}

}  // namespace sigvisor::x86
