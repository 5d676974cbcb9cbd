// An x86-64 KVM machine for one run: RAM, the loaded image, boot state, the bus
// with its devices (COM1 serial, debug-exit, hypercall port) and the vCPU.
#ifndef SIGVISOR_ARCH_X86_64_VMM_MACHINE_X86_MACHINE_H_
#define SIGVISOR_ARCH_X86_64_VMM_MACHINE_X86_MACHINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "arch/x86_64/vmm/cpu/vcpu_state.h"
#include "arch/x86_64/vmm/machine/boot_target.h"
#include "arch/x86_64/vmm/trap/trap_engine.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"
#include "vmm/machine/memory_residency.h"
#include "vmm/run/hypercall_table.h"
#include "vmm/run/session.h"
#include "vmm/run/signal_frame_counts.h"
#include "vmm/snapshot/snapshot_header.h"

namespace sigvisor::x86 {

// Fixed device addresses (the PC's, so other tools' guests find them too).
inline constexpr uint64_t kSerialPort = 0x3f8;
inline constexpr uint64_t kDebugExitPort = 0xf4;
inline constexpr uint64_t kPicMasterPort = 0x20;  // Multiboot kernels only, with the
inline constexpr uint64_t kPicSlavePort = 0xa0;   // fw_cfg and PCI-config stubs
// --vcpus: at most this many (APIC IDs 0..kMaxVcpus-1, within an 8-bit xAPIC ID).
inline constexpr int kMaxVcpus = 64;

// How an SMP sigvisor kernel sends inter-processor interrupts (sigvisor_boot_info.ipi,
// `run --ipi`): the x2APIC's ICR MSR, the xAPIC's MMIO ICR, or the VMM's send_ipi
// hypercall (SIGVISOR_IPI_*).
enum class IpiMethod { kX2apic, kXapic, kPv };
std::string_view IpiMethodName(IpiMethod method);  // "x2apic", "xapic", "pv"
// `--ipi` NAME; InvalidArgument naming the choices otherwise.
absl::StatusOr<IpiMethod> ParseIpiMethod(std::string_view name);
// The boot info's word for `method` (SIGVISOR_IPI_X2APIC, ...).
uint32_t IpiMethodAbi(IpiMethod method);

// Whose local APICs an SMP sigvisor kernel's vCPUs have (`run --lapic`): KVM's
// in-kernel ones (KVM_CREATE_IRQCHIP; the APIC writes stay in KVM), or the VMM's own
// (local_apic.h; no irqchip: the guest's APIC accesses and halts exit to the VMM, which
// delivers the IPIs and injects them).
enum class Lapic { kKvm, kVmm };
std::string_view LapicName(Lapic lapic);  // "kvm", "vmm"
// `--lapic` NAME; InvalidArgument naming the choices otherwise.
absl::StatusOr<Lapic> ParseLapic(std::string_view name);

// vCPU `id`'s CPUID on a machine of `count` vCPUs, from the board's (its features from
// KVM_GET_SUPPORTED_CPUID). KVM leaves the topology to the VMM: its leaves that name a
// CPU hold the host CPU's that ran the ioctl (its initial APIC ID in leaf 1 EBX[31:24],
// its x2APIC ID in leaves 0xB and 0x1F EDX, AMD's extended APIC ID in leaf 0x8000001E
// EAX). Each vCPU gets its own there, `id` (its LAPIC's ID, which KVM makes its vCPU
// id), and leaf 1 EBX[23:16] the machine's CPU count (HTT with more than one); so the
// guest's CPUID depends only on the machine, never on where the VMM ran, and a
// snapshot's compares equal on any CPU of its host.
std::vector<kvm_cpuid_entry2> VcpuCpuid(std::span<const kvm_cpuid_entry2> board_cpuid, int id,
                                        int count);

struct MachineConfig;
// The IPI way and the local APICs of a machine of several vCPUs: the config's, or
// their defaults (x2apic, KVM's) where it names none.
IpiMethod IpiMethodOf(const MachineConfig& config);
Lapic LapicOf(const MachineConfig& config);

// What a run's interceptor (the instruction tracer, the gdb stub, the injector) works
// with. Valid from the interceptor's creation to the end of the run.
struct MachineContext {
  const ElfImage& image;
  VcpuState& cpu;              // registers, guest memory, guest debug (one arbiter)
  Backend& backend;            // Kick() interrupts a running guest
  const TrapEngine* traps;     // the trap mechanism, or null for --trap=off
  bool sync_regs;              // registers travel in kvm_run (KVM_CAP_SYNC_REGS)
  // The guest's hypercalls: an interceptor that owns one registers for its number
  // (the injector: SIGVISOR_HC_EVENT); the guest protocol takes the rest after.
  HypercallTable& hypercalls;
  // Makes KVM forget its shadow of the guest's page tables, after the VMM edited one
  // (fault injection): a host write to guest memory is invisible to KVM's tracking.
  std::function<absl::Status()> flush_shadow_mmu;
  // KVM_CAP_EXCEPTION_PAYLOAD is enabled: an injected #PF carries CR2 as its payload.
  bool exception_payload = false;
  // The host emulates guest CPL0 (PVM) rather than running it directly (hardware).
  bool cpl0_emulated = false;
};

// Makes one interceptor once the machine is set up, before the first guest
// instruction; it joins the session's interceptors after the trap engine (each takes
// only the exits it caused or asked for, see exit_interceptor.h).
using InterceptorFactory =
    std::function<absl::StatusOr<std::unique_ptr<ExitInterceptor>>(MachineContext&)>;

struct MachineConfig {
  uint64_t memory_bytes = 32ull << 20;
  // The guest's command line: sigvisor_boot_info.cmdline; for a Linux kernel, what
  // follows sigvisor's own parameters (LinuxBaseCmdline).
  std::string cmdline;
  // What boots, and how: chosen once from the image (boot_target.h); its board
  // refuses what it cannot do.
  BootTarget target;
  // vCPUs: vCPU 0 boots; the others are APs, each on its own thread over the same bus
  // (ap_runner.h), with the in-kernel LAPIC (which they imply). A Multiboot kernel's
  // wait for INIT/SIPI, and its fw_cfg says how many (key 0x05); an SMP sigvisor
  // kernel's (built with smp=on: its SMP note) wait for its SIGVISOR_HC_CPU_UP, and its
  // boot info says how many.
  int vcpus = 1;
  // An SMP sigvisor kernel on several vCPUs: how it sends IPIs (boot info). Unset:
  // x2apic there; refused with one vCPU and for any other kind of guest.
  std::optional<IpiMethod> ipi;
  // Also there: whose local APICs. Unset: KVM's; refused where `ipi` is.
  std::optional<Lapic> lapic;
  bool cpl0_emulated = false;   // tells the guest (boot-info flag)
  bool injection_events = false;  // the guest reports injection outcomes (boot-info flag)
  SessionOptions session;       // timeout, console sink (describe, interceptor filled in here)
  // Check each phase's wall time against its TSC cycles at vCPU 0's TSC rate
  // (KVM_GET_TSC_KHZ, filled into session.guest_tsc_khz here); false where the guest
  // does not run in real time (single-stepped).
  bool check_clocks = false;
  // Read what of guest RAM is in host memory at the run's end (MachineReport's
  // guest_memory, from /proc/self/smaps): for the commands that report it.
  bool report_guest_memory = false;
  // How guest debug-register accesses and segment loads reach the VMM (trap_engine.h).
  // Decided by the caller: kOff runs the guest untouched.
  TrapMechanism trap = TrapMechanism::kOff;
  // Interceptors added for this run (tracer, debugger, injector), in the order they see exits.
  std::vector<InterceptorFactory> interceptors;
  // `sigvisor snapshot`: the directory the VM is saved to when its guest reaches its
  // quiescent point (docs/snapshots.md); the run then ends there (outcome saved).
  // `save_header` has what the caller knows (version, image, host kind); the machine
  // fills in the rest. Empty: the guest is given its orders and runs on.
  std::string save_to;
  SnapshotHeader save_header;
  // No interrupt injected between a phase's BEGIN and END markers
  // (phase_interrupt_block.h): a guest with timers measures its phases alone.
  bool block_phase_interrupts = false;
  // signal=pv kernels: the VMM computes each frame and sigreturn but lets the kernel
  // write them, then compares byte for byte (run --check-signal-frames).
  bool check_signal_frames = false;
  // The interceptors are the step tracer alone (`sigvisor trace`), which follows a Linux
  // kernel too; the gdb stub and the fault injector read sigvisor's boot protocol.
  bool interceptors_trace_only = false;
};

struct MachineReport {
  RunResult result;
  // KVM_CREATE_VM to a vCPU ready to run (the supported CPUID is the KvmSystem's,
  // read when it was opened).
  uint64_t vm_create_ns = 0;
  uint64_t setup_ns = 0;      // image load, boot tables, registers
  size_t trap_sites = 0;      // sites the trap mechanism armed (all found, for patch)
  BootProtocol protocol = BootProtocol::kSigvisor;
  std::string kernel_cmdline;  // the command line the kernel was given
  // With save_to, once saved: what the snapshot holds (its parts' figures).
  struct Saved {
    uint64_t state_bytes = 0;
    uint64_t memory_pages = 0;     // pages written to the memory image (not zero)
    uint64_t memory_disk_bytes = 0;  // the memory image's blocks on disk
    std::string fpu;               // where the FPU state comes from (FpuSource)
    std::vector<uint32_t> msrs_refused;
  };
  std::optional<Saved> saved;
  bool restored = false;  // the target was a RestoredVm
  // What the signal=pv hypercalls did, if the guest made any (or the run checked).
  std::optional<SignalFrameCounts> signal_frames;
  // An SMP sigvisor kernel on several vCPUs: the IPI method it was told (unset on one
  // vCPU and for other guests), the IPIs the VMM delivered for its send_ipi calls (to
  // every vCPU, 0 included; each AP's own count is in result.other_vcpus) and those KVM
  // did not deliver (the target's LAPIC was not enabled).
  std::optional<IpiMethod> ipi;
  std::optional<Lapic> lapic;  // whose local APICs, where `ipi` is set
  uint64_t ipis_delivered_by_vmm = 0;
  uint64_t ipis_blocked = 0;
  // Guest RAM in host memory at the run's end (memory_residency.h), read before a
  // snapshot's memory image is written; unset where the host would not say.
  std::optional<MemoryResidency> guest_memory;
};

// What `config` asks of `image` that no machine can give (the vCPU count, RAM, and
// the boot target's own refusals: board.h), checked without KVM, so that a command
// can refuse bad input before it opens /dev/kvm. BootAndRun checks it again.
absl::Status CheckMachineConfig(const ElfImage& image, const MachineConfig& config);

// For a command that restores one snapshot (config.target, a RestoredVm) many times
// (bench --snapshots): what every restore would refuse before its vCPU runs, asked
// once, so that it is refused before the first run rather than failing each. That is
// CheckMachineConfig's refusals (the image, RAM, the trap mechanism), a CPUID other
// than the one this host gives the guest, and a memory image whose checksums fail
// (mapped and checked, then unmapped). Creates no VM.
absl::Status CheckRestore(const KvmSystem& kvm, const ElfImage& image, const MachineConfig& config);

// A restore runs the machine its snapshot was saved with: `header`'s vCPUs, IPI way and
// local APICs into `config` (the guest read them from its boot info, or reads them after
// its quiescent point from memory the snapshot holds); a snapshot of Linux on several
// vCPUs names neither (KVM's APICs, Linux's own IPIs). InvalidArgument for a name this
// build does not know.
absl::Status TakeSavedMachine(const SnapshotHeader& header, MachineConfig& config);

// Creates a VM, boots `image` in it and runs it to the end. Errors are for what
// prevents booting at all (bad image, KVM failures); how the guest ended is in the
// report.
absl::StatusOr<MachineReport> BootAndRun(const KvmSystem& kvm, const ElfImage& image,
                                         const MachineConfig& config);

}  // namespace sigvisor::x86

#endif  // SIGVISOR_ARCH_X86_64_VMM_MACHINE_X86_MACHINE_H_
