// Everything one `sigvisor run` measured, as the reports present it.
#ifndef SIGVISOR_VMM_REPORT_RUN_RECORD_H_
#define SIGVISOR_VMM_REPORT_RUN_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vmm/inject/injection_record.h"
#include "vmm/machine/memory_residency.h"
#include "vmm/run/session.h"
#include "vmm/run/signal_frame_counts.h"
#include "vmm/run/trap_mechanism.h"

namespace sigvisor {

// What ran the guest. kind: "pvm" or "hardware" (KVM; see arch/x86_64/vmm/probe), or
// kMipsInterpreterHost (`run --arch mips`, which has no KVM: cpl0_emulated is
// meaningless there and the JSON gives null).
struct HostSummary {
  std::string kind;
  bool cpl0_emulated = false;
  std::string detail;  // for the text report's first line ("2 cores"); may be empty
};
inline constexpr char kMipsInterpreterHost[] = "mips-interpreter";

// Whose counters a run's stats are (RunResult::kvm_stats and the phases' alike):
// KVM's statistics by name, or the MIPS interpreter's counters. The reports name
// them accordingly (JSON: kvm_stats or interpreter_stats).
enum class StatsSource { kKvm, kMipsInterpreter };

// How guest debug-register accesses and segment loads reached the VMM.
struct TrapSummary {
  TrapMechanism mechanism = TrapMechanism::kOff;
  std::string reason;  // why this one (e.g. what --trap=auto decided)
  uint64_t sites = 0;  // trap sites armed in the image
};

struct RunRecord {
  std::string image;    // "kernel baseline (embedded)" or the path given
  std::string variant;           // the bundled kernel's build, "" for other images
  std::string variant_settings;  // "dr7=always pda=gs uaccess=err_or dequeue=copy"
  std::string cmdline;  // what the guest was told
  HostSummary host;
  StatsSource stats_source = StatsSource::kKvm;
  // False for a Multiboot kernel: it talks through the PC's devices (COM1, the first
  // byte of which the run loop would take for a first hypercall) and makes no
  // hypercall, so there is no boot span to report.
  bool guest_makes_hypercalls = true;
  // `run --restore`: the snapshot directory the VM was restored from; the run then has
  // no boot of its own (the snapshot's was paid once, by `sigvisor snapshot`).
  std::string restored_from;
  TrapSummary trap;
  RunResult result;
  uint64_t vm_create_ns = 0;
  uint64_t setup_ns = 0;
  uint64_t wall_ns = 0;  // the whole command: VM creation to report
  // --inject: every injection planned, in order, with its outcome; and --seed.
  std::vector<InjectionRecord> injections;
  uint64_t inject_seed = 0;
  // --block-phase-interrupts: no interrupt was injected inside the measured phases.
  bool phase_interrupts_blocked = false;
  // A signal=pv kernel's frame calls (or --check-signal-frames' comparisons).
  std::optional<SignalFrameCounts> signal_frames;
  // Several vCPUs (docs/smp.md): how the bundled kernel sends its IPIs ("x2apic",
  // "xapic", "pv"; empty on one vCPU and for other guests), and the IPIs the VMM
  // delivered for its send_ipi hypercalls, to every vCPU. result.other_vcpus holds
  // vCPUs 1 ..; result.ledger and result.kvm_stats are then vCPU 0's. (A guest that
  // starts its APs the PC way, Multiboot or Linux, has one ledger of every vCPU's
  // exits and no other_vcpus; its phases have each vCPU's all the same.)
  std::string ipi;
  // Whose local APICs those vCPUs had ("kvm", "vmm": run --lapic); empty where `ipi` is.
  std::string lapic;
  uint64_t ipis_delivered_by_vmm = 0;
  // Guest RAM in host memory at the run's end, and how much of it the VM wrote
  // (memory_residency.h: a restore shares the rest with every restore of its
  // snapshot); unset where the host would not say (and for the MIPS interpreter).
  std::optional<MemoryResidency> guest_memory;
};

// The KVM statistics each vCPU's part of a phase shows per op (docs/json.md, "Several
// vCPUs"), in this order: the JSON's name, KVM's, and the text report's row label.
struct VcpuPhaseStat {
  const char* json_name;
  const char* kvm_name;
  const char* text_label;
};
inline constexpr VcpuPhaseStat kVcpuPhaseStats[] = {
    {"interrupts", "irq_injections", "interrupts (irq_injections)"},
    {"halts", "halt_exits", "halts (halt_exits)"},
    {"halt_wakeups", "halt_wakeup", "halt_wakeup"},
};

// The KVM statistics every report shows (when the host has them), in this order.
inline constexpr const char* kReportedKvmStats[] = {
    "exits",           "io_exits",          "mmio_exits", "halt_exits",
    "insn_emulation",  "insn_emulation_fail", "pf_guest",   "pf_taken",
    "irq_injections",  "signal_exits",      "req_event",
};

// The MIPS interpreter's counters (docs/mips-platform.md), shown instead when a run's
// stats are the interpreter's.
inline constexpr const char* kReportedInterpreterStats[] = {
    "instructions", "exceptions",           "tlb_refills", "tlb_invalid",
    "tlb_modified", "syscalls",             "interrupts",  "icache_lines_flushed",
    "ipis_sent",    "mmio_exits",           "bus_errors",  "modelled_cycles",
    "vdso_fetches", "vdso_writes",
};

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_REPORT_RUN_RECORD_H_
