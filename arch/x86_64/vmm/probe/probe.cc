#include "arch/x86_64/vmm/probe/probe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/probe/kvm_vendor.h"
#include "arch/x86_64/vmm/probe/probe_guest.h"
#include "guest-kit/probe/probe_abi.h"

namespace sigvisor {
namespace {

using probe::CaseRun;
using probe::ProbeGuest;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr uint64_t kDr6Bd = 1u << 13;  // "a debug-register access was detected"

// DetectHost's loop, where /sys/module cannot say: 2 * 48 + 3 = 99 counted CPL0
// instructions, ~0.1 ms on PVM.
constexpr uint64_t kDetectIterations = 48;
constexpr absl::Duration kDetectTimeout = absl::Seconds(1);

// Above this many insn_emulation per CPL0 instruction, CPL0 is emulated (PVM: 1.0,
// hardware: 0). Without the stat: above this many ns per CPL0 instruction (PVM:
// ~1000, hardware: a few, plus the END exit spread over the loop).
constexpr double kEmulatedInsnRatio = 0.5;
constexpr double kEmulatedNsPerInsn = 200;

double Median(std::vector<double> values) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Instructions the guest runs between the BEGIN and END exits of the empty loop.
double EmptyLoopInsns(uint64_t iterations) {
  return static_cast<double>(iterations * PROBE_EMPTY_LOOP_INSNS + PROBE_EMPTY_EXTRA_INSNS);
}

// What the empty loop says about CPL0. Both per-run figures, medians over runs.
struct CpuEvidence {
  std::vector<double> insn_emulation_per_insn;  // empty if KVM has no such stat
  std::vector<double> ns_per_insn;

  void Add(const CaseRun& empty) {
    const double insns = EmptyLoopInsns(empty.iterations);
    if (empty.insn_emulation) insn_emulation_per_insn.push_back(*empty.insn_emulation / insns);
    ns_per_insn.push_back(empty.loop_ns / insns);
  }
};

std::string KindName(bool cpl0_emulated) { return cpl0_emulated ? "pvm" : "hardware"; }

// What /sys/module says about the vendor, for a note beside a measurement.
std::string VendorNote(const std::optional<KvmVendorModule>& vendor) {
  if (!vendor) return "no single KVM vendor module (kvm_pvm, kvm_intel, kvm_amd) in /sys/module";
  return absl::StrFormat("KVM vendor module %s (/sys/module/%s)", vendor->name, vendor->name);
}

// The host as its KVM vendor module says (kvm_vendor.h), with no VM.
HostInfo FromVendor(const KvmVendorModule& vendor) {
  HostInfo info;
  info.cpl0_emulated = vendor.cpl0_emulated;
  info.kind = KindName(vendor.cpl0_emulated);
  info.note =
      vendor.cpl0_emulated
          ? absl::StrFormat("KVM vendor module %s (/sys/module/%s): PVM emulates guest CPL0",
                            vendor.name, vendor.name)
          : absl::StrFormat(
                "KVM vendor module %s (/sys/module/%s; no kvm_pvm): guest CPL0 runs on the CPU",
                vendor.name, vendor.name);
  return info;
}

// The host as the empty loop measured it.
HostInfo Classify(const CpuEvidence& evidence, const std::optional<KvmVendorModule>& vendor) {
  HostInfo info;
  const double ratio = Median(evidence.insn_emulation_per_insn);
  if (!std::isnan(ratio)) {
    info.cpl0_emulated = ratio >= kEmulatedInsnRatio;
    info.note = absl::StrFormat("insn_emulation +%.2f per guest CPL0 instruction", ratio);
  } else {
    const double ns = Median(evidence.ns_per_insn);
    info.cpl0_emulated = ns >= kEmulatedNsPerInsn;
    info.note = absl::StrFormat(
        "KVM has no insn_emulation stat; a guest CPL0 instruction took %.0f ns", ns);
  }
  info.kind = KindName(info.cpl0_emulated);
  absl::StrAppend(&info.note, "; ", VendorNote(vendor));
  return info;
}

absl::StatusOr<CaseRun> RunBaseline(const ProbeGuest& guest, uint64_t iterations,
                                    absl::Duration timeout) {
  absl::StatusOr<CaseRun> run = guest.Run(PROBE_CASE_EMPTY, iterations, timeout);
  if (!run.ok()) return run.status();
  if (!run->completed) {
    return absl::InternalError(
        absl::StrFormat("the probe's baseline loop at CPL0 did not finish: %s", run->failure));
  }
  return run;
}

struct Verdict {
  bool works;
  std::string note;
};

// Whether one timed run shows the mechanism working K times, and how.
Verdict Judge(const CaseRun& run) {
  const uint64_t k = run.iterations;
  if (!run.completed) return {false, run.failure};
  switch (run.case_id) {
    case PROBE_CASE_OUT:
      if (run.work_outs == k) return {true, "KVM_EXIT_IO per out"};
      return {false, absl::StrFormat("%d of %d outs exited", run.work_outs, k)};
    case PROBE_CASE_HLT:
      if (run.halts == k) return {true, "KVM_EXIT_HLT per hlt (no irqchip)"};
      return {false, absl::StrFormat("%d of %d hlts exited", run.halts, k)};
    case PROBE_CASE_INT3:
      if (run.int3_exits == k) {
        return {true, "KVM_EXIT_INTERNAL_ERROR (emulation failure); VMM does rip+1"};
      }
      if (run.guest_bp_count == k) return {true, "no VMM exit: guest #BP handler, iretq"};
      return {false, absl::StrFormat("%d VMM exits and %d guest #BP for %d int3",
                                     run.int3_exits, run.guest_bp_count, k)};
    case PROBE_CASE_MOV_DR7: {
      if (run.debug_exits == k) return {true, "KVM_EXIT_DEBUG per DR7 write; VMM does rip+3"};
      std::string note = absl::StrFormat(
          "%d KVM_EXIT_DEBUG for %d guest DR7 writes: the VMM's DR7.GD does not trap",
          run.debug_exits, k);
      if (run.guest_db_count != 0) {
        absl::StrAppendFormat(&note, " (the guest got %d #DB)", run.guest_db_count);
      }
      return {false, note};
    }
    case PROBE_CASE_GD_SELF_TRAP:
    case PROBE_CASE_GD_SELF_TRAP_PV: {
      const bool pv = run.case_id == PROBE_CASE_GD_SELF_TRAP_PV;
      if (run.guest_db_count != k || (run.guest_dr6 & kDr6Bd) == 0) {
        return {false, absl::StrFormat("%d #DB for %d DR reads (last DR6 %#x)",
                                       run.guest_db_count, k, run.guest_dr6)};
      }
      if (pv && run.work_outs != k) {
        return {false, absl::StrFormat("%d of %d reports exited", run.work_outs, k)};
      }
      return {true, absl::StrFormat("guest #DB, DR6 %#x (BD); handler re-arms GD%s",
                                    run.guest_dr6, pv ? ", then out" : "")};
    }
    default: return {false, "not a timed case"};
  }
}

// One timed mechanism across the repeats.
struct Mechanism {
  const char* name;
  int case_id;
  std::vector<double> round_trips_ns;
  bool failed = false;
  std::string note;
};

std::string VectorName(int vector) {
  switch (vector) {
    case 6: return "#UD";
    case 8: return "#DF";
    case 13: return "#GP";
    case 14: return "#PF";
    default: return absl::StrFormat("vector %#x", vector);
  }
}

// SYSCALL from CPL3: where does the LSTAR target run?
absl::Status ProbeSyscall(const ProbeGuest& guest, absl::Duration timeout, ProbeReport& report) {
  absl::StatusOr<CaseRun> run = guest.Run(PROBE_CASE_SYSCALL, 1, timeout);
  if (!run.ok()) return run.status();
  report.syscall_enters_cpl0 = false;
  if (run->syscall) {
    report.syscall_enters_cpl0 = run->syscall->cpl == 0;
    report.notes.push_back(absl::StrFormat(
        "SYSCALL from CPL3: the LSTAR target ran at CPL%d (cs %#x) and its out exited",
        run->syscall->cpl, run->syscall->cs_selector));
  } else if (run->vector) {
    report.notes.push_back(absl::StrFormat(
        "SYSCALL from CPL3: the LSTAR target ran at CPL%d (cs %#x); its out raised %s",
        run->vector->cs & 3, run->vector->cs, VectorName(run->vector->vector)));
  } else {
    report.notes.push_back("SYSCALL from CPL3: " + run->failure);
  }
  return absl::OkStatus();
}

// int $0x80 from CPL3 through a DPL3 gate: vector 0x80, or something else?
absl::Status ProbeIntN(const ProbeGuest& guest, absl::Duration timeout, ProbeReport& report) {
  absl::StatusOr<CaseRun> run = guest.Run(PROBE_CASE_INT80, 1, timeout);
  if (!run.ok()) return run.status();
  if (run->vector) {
    report.int_n_from_cpl3 = run->vector->vector == 0x80;
    report.int_n_from_cpl3_vector = run->vector->vector;
    report.notes.push_back(absl::StrFormat(
        "int $0x80 from CPL3 (DPL3 gate): %s at rip %#x",
        report.int_n_from_cpl3 ? "delivered as vector 0x80" : VectorName(run->vector->vector),
        run->vector->rip));
  } else {
    report.int_n_from_cpl3 = false;
    report.int_n_from_cpl3_vector = -1;
    report.notes.push_back("int $0x80 from CPL3: " + run->failure);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HostInfo> DetectHost(const KvmSystem& kvm) {
  // The vendor module answers for free. Booting the probe's guest instead cost every
  // `sigvisor run` a second VM: its create and teardown, ~100 emulated instructions,
  // and a static-key flip of the host kernel's text each way (smp_text_poke) as its
  // vCPU came and went.
  if (std::optional<KvmVendorModule> vendor = LoadedKvmVendor()) return FromVendor(*vendor);
  absl::StatusOr<ProbeGuest> guest = ProbeGuest::Create(kvm);
  if (!guest.ok()) return guest.status();
  absl::StatusOr<CaseRun> empty = RunBaseline(*guest, kDetectIterations, kDetectTimeout);
  if (!empty.ok()) return empty.status();
  CpuEvidence evidence;
  evidence.Add(*empty);
  return Classify(evidence, std::nullopt);
}

absl::StatusOr<ProbeReport> RunProbe(const KvmSystem& kvm, const ProbeOptions& options) {
  if (options.iterations < 1 || options.repeats < 1 ||
      options.run_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "probe options: iterations (%d) and repeats (%d) must be >= 1 and run_timeout (%s) "
        "positive",
        options.iterations, options.repeats, absl::FormatDuration(options.run_timeout)));
  }
  const uint64_t k = static_cast<uint64_t>(options.iterations);
  absl::StatusOr<ProbeGuest> guest = ProbeGuest::Create(kvm);
  if (!guest.ok()) return guest.status();

  std::vector<Mechanism> mechanisms = {
      {"io_exit", PROBE_CASE_OUT},
      {"hlt_cpl0", PROBE_CASE_HLT},
      {"int3_cpl0", PROBE_CASE_INT3},
      {"vmm_dr7_gd", PROBE_CASE_MOV_DR7},
      {"guest_gd_self_trap", PROBE_CASE_GD_SELF_TRAP},
      {"guest_gd_self_trap_pv", PROBE_CASE_GD_SELF_TRAP_PV},
  };
  CpuEvidence evidence;
  std::vector<double> setup_ns;

  // Each repeat measures the baseline and then every mechanism, so drift in the
  // host's load hits both sides of a difference alike.
  for (int repeat = 0; repeat < options.repeats; ++repeat) {
    absl::StatusOr<CaseRun> empty = RunBaseline(*guest, k, options.run_timeout);
    if (!empty.ok()) return empty.status();
    evidence.Add(*empty);
    setup_ns.push_back(empty->setup_ns);
    for (Mechanism& m : mechanisms) {
      if (m.failed) continue;  // one failure settles it; do not wait for it again
      absl::StatusOr<CaseRun> run = guest->Run(m.case_id, k, options.run_timeout);
      if (!run.ok()) return run.status();
      setup_ns.push_back(run->setup_ns);
      Verdict verdict = Judge(*run);
      m.note = verdict.note;
      if (!verdict.works) {
        m.failed = true;
        continue;
      }
      m.round_trips_ns.push_back(static_cast<double>(run->loop_ns - empty->loop_ns) / k);
    }
  }

  ProbeReport report;
  const std::optional<KvmVendorModule> vendor = LoadedKvmVendor();
  const HostInfo host = Classify(evidence, vendor);
  if (vendor && vendor->cpl0_emulated != host.cpl0_emulated) {
    // DetectHost (every `sigvisor run`) takes the module's word: say so where it is wrong.
    report.notes.push_back(absl::StrFormat(
        "KVM vendor module %s implies a %s host, but guest CPL0 measured as on a %s host; "
        "DetectHost goes by the module (arch/x86_64/vmm/probe/kvm_vendor.h)",
        vendor->name, KindName(vendor->cpl0_emulated), host.kind));
  }
  report.host_kind = host.kind;
  report.cpl0_emulated = host.cpl0_emulated;
  report.host_note = host.note;
  report.insn_emulation_per_cpl0_insn = Median(evidence.insn_emulation_per_insn);
  report.iterations = options.iterations;
  report.repeats = options.repeats;
  for (const Mechanism& m : mechanisms) {
    report.mechanisms.push_back(MechanismResult{
        m.name, !m.failed, m.failed ? kNaN : Median(m.round_trips_ns), m.note});
  }
  if (absl::Status s = ProbeSyscall(*guest, options.run_timeout, report); !s.ok()) return s;
  if (absl::Status s = ProbeIntN(*guest, options.run_timeout, report); !s.ok()) return s;
  report.vm_create_ns = Median(setup_ns);
  return report;
}

}  // namespace sigvisor
