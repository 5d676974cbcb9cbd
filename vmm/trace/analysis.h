// What a phase's trace says: its operations, each op's kernel instructions as KVM
// counts them (checked against the ledger), a per-function flat profile and the
// stages of signal delivery and sigreturn.
//
// Counting. KVM's insn_emulation (the ledger's kernel_insns on a host that emulates
// CPL0) counts every pass of its emulator: each CPL0 instruction once, a `rep`
// string instruction twice (a pass that moves the bytes and one that finds the
// count at zero), and on PVM each user `int $0x80` once (decoded, not emulated:
// #UD). The trace counts the same way, from what it saw, so that one op's count can
// be checked against the ledger's per-op figure.
//
// Operations. The phase starts in the kernel (the BEGIN marker's system call
// returning) and ends in it (the END marker's entering): those two kernel spans are
// the markers' own cost, which the ledger measures separately (the calibration
// phase) and subtracts. In between, each stretch of user code is followed by a
// kernel span; the (user, kernel) pairs split evenly into the phase's ops (divzero:
// the user code up to the #DE and its delivery, then the handler and its
// sigreturn) and the last pair is the END marker's.
//
// Any step stream. The tracer can lose code (a host that does not step a path, a
// trace cut short), so nothing here assumes the shape above: every Trace, of any
// entries and any ops, gives a well-formed Analysis. When the ops cannot be told
// apart, `ops` stays empty and `ops_note` says why. Counts saturate at UINT64_MAX
// rather than wrap (an opaque span's host_emulated is the host's word, not ours).
#ifndef SIGVISOR_VMM_TRACE_ANALYSIS_H_
#define SIGVISOR_VMM_TRACE_ANALYSIS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vmm/trace/trace.h"

namespace sigvisor::trace {

// The functions an entry runs in, outermost first: callers, the function, the
// inlined ones. For opaque user code: one pseudo-frame naming how it was left.
std::vector<std::string> Frames(const Entry& entry);

// Kernel instructions of an entry as KVM counts them (see above).
uint64_t HostCount(const Entry& entry);

// a + b, or UINT64_MAX where that would wrap: how every count here adds up.
uint64_t AddCounts(uint64_t a, uint64_t b);

struct FunctionRow {
  std::string function;
  uint64_t self = 0;       // in this function itself (innermost frame)
  uint64_t inclusive = 0;  // with everything it called or had inlined
};

struct StageRow {
  std::string stage;
  uint64_t kernel_insns = 0;  // as KVM counts them
  bool opaque = false;        // user code the host ran unstepped
  std::string detail;         // what it covers, e.g. "get_signal, dequeue_signal"
};

struct OpSlice {
  size_t begin = 0;  // entry indices [begin, end)
  size_t end = 0;
  uint64_t kernel_insns = 0;  // as KVM counts them
  uint64_t distinct = 0;      // CPL0 instructions executed (a rep once)
};

struct Analysis {
  uint64_t phase_kernel_insns = 0;  // the whole phase, as KVM counts it
  uint64_t phase_distinct = 0;      // CPL0 instructions executed in it
  uint64_t marker_kernel_insns = 0; // the first kernel span and the last pair
  size_t first_span_end = 0;        // entry index where the ops begin
  size_t last_pair_begin = 0;       // entry index where the END marker's part begins
  // Each op's entries, in order, within [first_span_end, last_pair_begin]; empty
  // when the trace cannot be cut into the phase's ops, and then ops_note says why
  // ("" when it could).
  std::vector<OpSlice> ops;
  std::string ops_note;
  bool ops_uniform = false;         // every op has the same count
  std::vector<FunctionRow> profile; // of the first op (or the whole phase without ops)
  std::vector<StageRow> stages;     // of the first op
  // The ledger's figures (from the Trace), and whether the trace matches them.
  std::optional<uint64_t> ledger_per_op;
  std::optional<uint64_t> ledger_marker;
  std::optional<bool> matches_ledger;  // each op == ledger per op, markers == calibration
};

Analysis Analyze(const Trace& trace);

// The stage of each entry of [begin, end) (one op), "" for none; `rows` gets the
// totals in order of first appearance. The stages (stages.h) are the bundled kernel's
// signal path (function names in guest-kit/kernel and arch/x86_64/guest): kernel entry,
// signal generation, dequeue (get_signal), the DR7 write (set_debugreg7), frame
// setup (handle_signal: setup_rt_frame with the sigcontext and siginfo copies,
// signal_delivered), the return to the handler, the handler itself (CPL3), and
// sigreturn's entry, sys_rt_sigreturn and exit. A Linux trace (trace.kernel) is cut
// by Linux's stage table (linux_stages.h) into the same stages and those only Linux
// has. The range is clipped to the trace (an empty one when begin >= end); the labels
// are one per entry of the clipped range.
std::vector<std::string> ClassifyStages(const Trace& trace, size_t begin, size_t end,
                                        std::vector<StageRow>* rows);

}  // namespace sigvisor::trace

#endif  // SIGVISOR_VMM_TRACE_ANALYSIS_H_
