// The calibration guest (guest-kit/probe/calibrate.S) and one run of it: a fresh VM
// per case, so no case inherits another's IDT, DR7, page-table or TSS edits.
//
// Internal to vmm/probe; probe.h is the public API.
#ifndef SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_GUEST_H_
#define SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_GUEST_H_

#include <linux/kvm.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/elf_image.h"

namespace sigvisor::probe {

// An exception the guest's handler reported (PROBE_PORT_VECTOR).
struct VectorReport {
  int vector = -1;
  uint64_t error_code = 0;
  uint64_t rip = 0;  // where it was raised
  uint64_t cs = 0;   // the interrupted context's cs (its low two bits are its CPL)
};

// What the SYSCALL target reported when it could do port I/O (PROBE_PORT_SYSCALL).
struct SyscallReport {
  uint64_t cs_selector = 0;  // its own %cs
  int cpl = -1;              // KVM_GET_SREGS cs.dpl at that exit
};

// One case in one VM. A guest that misbehaves (hangs, triple-faults, takes an
// unexpected exception) is a finding, not an error: it ends up in `failure`.
struct CaseRun {
  int case_id = 0;
  uint64_t iterations = 0;
  int64_t setup_ns = 0;  // KVM_CREATE_VM up to a vCPU ready to run (incl. image load)

  // Timed cases: reached the END marker. Fact cases: got their report.
  bool completed = false;
  std::string failure;  // why not, with where the guest was

  // Timed cases, between the BEGIN and END exits (host CLOCK_MONOTONIC).
  int64_t loop_ns = 0;
  std::optional<uint64_t> insn_emulation;  // vCPU stat delta, if KVM has the stat
  std::optional<uint64_t> kvm_exits;       // vCPU stat "exits" delta
  // Exits the VMM handled between the markers.
  uint64_t work_outs = 0;    // KVM_EXIT_IO on PROBE_PORT_WORK
  uint64_t halts = 0;        // KVM_EXIT_HLT
  uint64_t int3_exits = 0;   // KVM_EXIT_INTERNAL_ERROR at an int3, skipped
  uint64_t debug_exits = 0;  // KVM_EXIT_DEBUG at a mov to DR7, skipped

  // The guest's own counters (parameter block) at the end.
  uint64_t guest_bp_count = 0;
  uint64_t guest_db_count = 0;
  uint64_t guest_dr6 = 0;

  // Fact cases.
  std::optional<VectorReport> vector;
  std::optional<SyscallReport> syscall;
};

class ProbeGuest {
 public:
  // Parses the embedded image and reads the host's CPUID once for all runs. `kvm`
  // must outlive the ProbeGuest.
  static absl::StatusOr<ProbeGuest> Create(const KvmSystem& kvm);

  // Boots a fresh VM and runs `case_id` (PROBE_CASE_*) for `iterations` (>= 1).
  // Errors are VMM-side failures (an ioctl, a bad argument); guest behaviour,
  // including a timeout, is reported in the CaseRun.
  absl::StatusOr<CaseRun> Run(int case_id, uint64_t iterations, absl::Duration timeout) const;

 private:
  ProbeGuest(const KvmSystem& kvm, ElfImage image, std::vector<kvm_cpuid_entry2> cpuid)
      : kvm_(&kvm), image_(std::move(image)), cpuid_(std::move(cpuid)) {}

  const KvmSystem* kvm_;
  ElfImage image_;
  std::vector<kvm_cpuid_entry2> cpuid_;
};

}  // namespace sigvisor::probe

#endif  // SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_GUEST_H_
