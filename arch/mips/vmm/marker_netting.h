// A MIPS phase's counts net of its markers' user code.
//
// The guest's calibration phases (phase_begin() in guest-kit/user/ulib.c) measure what
// the markers cost, and the phase tracker subtracts it. On x86-64 that is exact: only
// kernel instructions are counted there, and the markers' kernel path is the same
// every time. The interpreter counts user instructions too, and around a measured
// phase the markers' user code is not the calibration's: phase_begin's return, the
// workload's loop entry and exit and its call to phase_end run once per phase, about
// ten instructions (divzero's 1967 per op came out as 1968.1 at 10 ops, 1967.55 at
// 20).
//
// The machine measures that code: it watches the task that began the phase (its
// ASID) and counts the user-mode instructions it retires, in the phase and in the
// first calibration before it, and where it stood at its first and last entry into
// the phase's per-op system call. Between those two entries lie exactly ops - 1
// operations, so one operation costs the task (last - first) / (ops - 1) user
// instructions; what the task ran in user mode beyond ops of them, less what the
// calibration's markers ran (already subtracted), is the markers' code. It goes from
// the phase's instructions and modelled cycles (those of the core it ran on, and the
// totals) to its marker overhead. Kernel counts are left alone: the calibration nets
// them exactly, as on x86-64.
#ifndef SIGVISOR_ARCH_MIPS_VMM_MARKER_NETTING_H_
#define SIGVISOR_ARCH_MIPS_VMM_MARKER_NETTING_H_

#include <cstdint>
#include <optional>
#include <string>

#include "vmm/ledger/phase_tracker.h"

namespace sigvisor::mips {

// What the machine saw of one measured phase's task.
struct OperationMarks {
  std::string phase;
  uint64_t ops = 0;
  std::optional<uint64_t> op_syscall;  // the per-op system call the guest named
  uint64_t entries = 0;                // the task's entries into it
  int core = 0;                        // the core they were made on
  int cores = 1;                       // the machine's (more than one: "coreN." stats)
  bool one_core = true;                // false: the task moved between cores
  // The task's user-mode instructions: at its first and last entry, over the whole
  // phase, and over the calibration phase whose counts the tracker subtracted.
  uint64_t first = 0, last = 0;
  uint64_t phase_user = 0;
  std::optional<uint64_t> calibration_user;
};

// Nets `phase` (its counts already net of the calibration) of the markers' user code
// measured by `marks`, moving that to phase.marker_overhead. Leaves `phase` as it is
// and returns why, one sentence, when the marks cannot say it exactly: no per-op
// system call, fewer than 2 ops, no calibration, entries that are not one per op or
// not all on one core, or operations whose user code is not the same each time.
std::optional<std::string> NetMarkerUserCode(const OperationMarks& marks, PhaseResult& phase);

}  // namespace sigvisor::mips

#endif  // SIGVISOR_ARCH_MIPS_VMM_MARKER_NETTING_H_
