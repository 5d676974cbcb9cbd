// What one traced op did, counted from its instructions in the terms the seeds use:
// debug-register writes (seed 000), %gs-prefixed instructions and swapgs (001), the
// frame set-up's instructions and user accesses (002), the dequeue stage's stores
// (003), and each stage's kernel instructions. The studies' Linux column is made of
// these (vmm/app/study/linux_column.h); they count any trace, the bundled kernel's too.
#ifndef SIGVISOR_VMM_TRACE_OP_COUNTS_H_
#define SIGVISOR_VMM_TRACE_OP_COUNTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "vmm/trace/analysis.h"
#include "vmm/trace/trace.h"

namespace sigvisor::trace {

struct OpCounts {
  uint64_t kernel_insns = 0;  // as KVM counts them (analysis.h)
  // Kernel instructions executed (a rep string instruction once), by what they are.
  uint64_t dr7_writes = 0;   // mov to %dr7
  uint64_t dr_writes = 0;    // mov to any debug register (each a trap under patch)
  uint64_t gs_prefixed = 0;  // with the %gs segment-override prefix (0x65)
  uint64_t swapgs = 0;
  uint64_t user_access_windows = 0;  // stac: SMAP lifted for a user access
  // Calls into a user-copy routine (_copy_to_user, __get_user_8, clear_user, ...), the
  // outermost only: a routine's own call of a lower one is not counted again.
  uint64_t user_copy_calls_in_frame_setup = 0;
  // Kernel instructions per stage, as KVM counts them.
  std::map<std::string, uint64_t> stage_insns;
  // The functions whose own instructions fall in the frame set-up (with the FPU frame).
  std::set<std::string> frame_setup_functions;
  // The dequeue stage's stores to memory other than the stack (%rsp-based), in bytes,
  // and the largest block of them one base register got at consecutive offsets, in
  // bytes: a structure copied field by field (the siginfo a dequeue copies).
  uint64_t dequeue_bytes_stored = 0;
  uint64_t dequeue_largest_block = 0;
};

// Counts op `op` of `trace` (`analysis.ops[op]`); nullopt when the analysis has no such op.
std::optional<OpCounts> CountOp(const Trace& trace, const Analysis& analysis, size_t op = 0);

// Whether an instruction's bytes carry the %gs segment-override prefix (0x65) among its
// legacy prefixes.
bool HasGsPrefix(const Entry& entry);

// A user-copy routine's name (Linux's and the bundled kernel's).
bool IsUserCopyRoutine(std::string_view function);

}  // namespace sigvisor::trace

#endif  // SIGVISOR_VMM_TRACE_OP_COUNTS_H_
