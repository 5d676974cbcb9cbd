// `sigvisor probe`: what this host's KVM does and what it costs, measured with a tiny
// calibration guest (guest-kit/probe/calibrate.S), so that later work can choose its
// trap mechanisms. On a PVM host (nested, guest CPL0 emulated at ~1 us/instruction)
// and on hardware VMX/SVM KVM the answers differ; see
// docs/host-notes.md for the PVM picture.
//
// Every probe VM runs under the shared watchdog (vmm/run/watchdog.h), so a guest
// that hangs the vCPU ends that run with a note, never the probe.
#ifndef SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_H_
#define SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor {

// How one trap mechanism behaved.
struct MechanismResult {
  // "io_exit", "hlt_cpl0", "int3_cpl0", "vmm_dr7_gd", "guest_gd_self_trap",
  // "guest_gd_self_trap_pv".
  std::string name;
  bool works = false;
  // Median over the repeats of (t_case - t_empty) / K: host wall clock between the
  // guest's two marker exits, minus the same loop without the operation. NaN when
  // the mechanism does not work.
  double round_trip_ns = 0;
  std::string note;  // what happened, e.g. which exit arrived
};

struct ProbeReport {
  std::string host_kind;  // "pvm" or "hardware"
  bool cpl0_emulated = false;
  // vCPU stat insn_emulation per guest CPL0 instruction: ~1 on PVM, ~0 on hardware,
  // NaN if KVM has no such stat.
  double insn_emulation_per_cpl0_insn = 0;
  bool syscall_enters_cpl0 = false;  // SYSCALL from CPL3 reaches LSTAR at CPL0
  bool int_n_from_cpl3 = false;      // int $0x80 through a DPL3 gate delivers 0x80
  int int_n_from_cpl3_vector = -1;   // the vector it delivered instead (6 = #UD)
  double vm_create_ns = 0;           // median KVM_CREATE_VM to a vCPU ready to run
  std::vector<MechanismResult> mechanisms;

  // Context for the numbers above.
  std::string host_note;           // how host_kind was decided
  std::vector<std::string> notes;  // details of the SYSCALL and INT n findings
  int iterations = 0;              // K of each timed loop
  int repeats = 0;
};

struct ProbeOptions {
  int iterations = 200;  // K: operations per timed loop
  int repeats = 3;       // runs per mechanism; the round trip is their median
  // Each probe VM run ends after this, whatever the guest does.
  absl::Duration run_timeout = absl::Seconds(2);
};

struct HostInfo {
  std::string kind;  // "pvm" or "hardware"
  bool cpl0_emulated = false;
  std::string note;  // the evidence: the KVM vendor module, or insn_emulation per instruction
};

// The one place a run learns its host kind. From the KVM vendor module the kernel has
// loaded (kvm_vendor.h: kvm_pvm, or kvm_intel/kvm_amd), with no VM; only where
// /sys/module names none or several, it boots one small VM, runs ~100 CPL0
// instructions and looks at how many of them KVM emulated (a few milliseconds).
// `sigvisor probe` measures instead, and says when the two disagree.
absl::StatusOr<HostInfo> DetectHost(const KvmSystem& kvm);

// The full probe: ~25 short VMs (well under a second on either kind of host).
absl::StatusOr<ProbeReport> RunProbe(const KvmSystem& kvm, const ProbeOptions& options = {});

}  // namespace sigvisor

#endif  // SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_H_
