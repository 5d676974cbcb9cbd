// Fuzzes the trace analysis, its formatters and the seed counts of an op
// (vmm/trace/analysis.h, format.h, op_counts.h), the bundled kernel's stages and Linux's, with
// random step streams: `sigvisor trace` must never abort, whatever the tracer
// recorded (a host that does not step a path, a trace cut short, odd symbols). Two
// traces are built from the input; each is analysed and put through the listing,
// the summary, the JSON document (dumped: nlohmann throws on what is not UTF-8) and
// the side-by-side diff, and the analysis must keep its promises: ops either cut
// exactly (contiguous, between the markers' parts, counted as KVM counts) or not at
// all with a note, the profile and the stages summing to the op's count, and so do the
// op's counts by stage.
//
// Input, read front to back (zeros once it runs out):
//   flags          bit 0-1 nonzero: complete; bit 2: ledger count; bit 3: ledger
//                  marker count; bit 4: an opaque reason; bit 5: host "pvm"; bits 6, 7:
//                  the first, the second trace is Linux's (its stage table)
//   ops            kOpCounts[byte % 8] (the last: an 8-byte number)
//   [ledger]       a count (below); [ledger marker] a count
//   first trace    how many of the entries are the first trace's (the rest, up to
//                  kMaxEntries, the second's)
//   stage range    two bytes: a [begin, end) for ClassifyStages, maybe past the end
//   entries        each: a shape byte, then what it asks for (see ReadEntry)
// A count is its byte when below 250, else an 8-byte little-endian number.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "vmm/trace/analysis.h"
#include "vmm/trace/format.h"
#include "vmm/trace/op_counts.h"
#include "vmm/trace/trace.h"

namespace {

using sigvisor::trace::Analysis;
using sigvisor::trace::Entry;
using sigvisor::trace::Trace;

void Check(bool ok) {
  if (!ok) std::abort();
}

// Long enough for a few ops of the divzero shape; short enough that the diff's
// alignment (quadratic) stays fast.
constexpr size_t kMaxEntries = 255;

// The stage rules' functions (vmm/trace/analysis.cc) and their neighbours on the
// bundled kernel's signal path, rows of Linux's stage table (linux_stages.cc), the
// tracer's mark of an exception in the kernel, and a name that is none.
constexpr std::string_view kFunctions[] = {
    "get_signal",       "handle_signal",     "sys_rt_sigreturn",     "exit_to_user_mode",
    "set_debugreg7",    "user_exception",    "force_sig_fault",      "send_signal",
    "sys_kill",         "setup_rt_frame",    "setup_sigcontext",     "trap_common",
    "x86_trap",         "x86_return_from_trap", "memcpy",            "",
    "asm_exc_divide_error",       "exc_divide_error",          "notify_die",
    "irqentry_exit_to_user_mode", "exit_to_user_mode_prepare", "arch_do_signal_or_restart",
    "get_sigframe.constprop.0",   "copy_fpstate_to_sigframe",  "__ia32_sys_rt_sigreturn",
    "entry_SYSCALL_64_after_hwframe", "apparmor_task_kill",    "inc_rlimit_get_ucounts",
    "_copy_to_user",              "[#PF]",
};
// Instructions the seed counts look for (op_counts.cc): stores, calls, stac, swapgs.
constexpr std::string_view kSeedTexts[] = {
    "movq %rdx, (%rbp)",        "movq %rdx, 8(%rbp)",        "movl $1, -0x10(%rcx)",
    "movb %al, 7(%rsp)",        "movq %rax, (%rax,%rbx,8)",  "movq %rax, %gs:0x28(%rbp)",
    "callq 0x10",               "stac",                      "swapgs",
};
constexpr std::string_view kTexts[] = {
    "nop", "iretq", "jne 0x1234", "jmp 0x10", "rep movsb (%rsi), (%rdi)", "movq %rax, %dr7",
    "mov 0xffffffff81000000, %rax",
};
constexpr std::string_view kExits[] = {
    "#DE", "#UD: int $0x80 (rt_sigreturn)", "#UD: int $0x80 (phase_end)", "#PF", "", "#BP",
    "#UD: int $0x80 (kill)",
};
constexpr uint64_t kOpCounts[] = {0, 1, 2, 3, 4, 6, UINT64_MAX, 0 /* an 8-byte number */};
constexpr uint32_t kPasses[] = {1, 2, 0, UINT32_MAX};

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return size_ == 0; }
  uint8_t Byte() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  uint64_t Number() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= uint64_t{Byte()} << (8 * k);
    return v;
  }
  uint64_t Count() {
    const uint8_t b = Byte();
    return b < 250 ? b : Number();
  }
  // A length byte (below 40) and that many raw bytes: any name, UTF-8 or not.
  std::string Text() {
    std::string s(Byte() % 40, '\0');
    for (char& c : s) c = static_cast<char>(Byte());
    return s;
  }
  std::string Function() {
    const uint8_t b = Byte();
    if (b >= 240) return Text();
    return std::string(kFunctions[b % std::size(kFunctions)]);
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

// Shape byte: bits 0-1 the kind (0, 1: CPL0 instruction; 2: CPL3 instruction; 3:
// opaque); bit 2: a CPL byte follows (any int8, for odd privilege levels); bit 3: a
// frames byte follows (callers: bits 0-1 names, inlined: bits 2-3 names); bit 4: an
// extras byte follows (ReadEntry); bits 5-7: the text (instruction) or the way out
// (opaque), 7 a random one. Then a function byte (instruction), or a host_emulated
// byte (opaque: below 200 it modulo 3, to 253 unknown, 254 UINT64_MAX, 255 a number).
Entry ReadEntry(Input& in, size_t index) {
  Entry e;
  const uint8_t shape = in.Byte();
  const uint8_t kind = shape & 3;
  e.kind = kind == 3 ? Entry::Kind::kOpaque : Entry::Kind::kInsn;
  e.cpl = kind >= 2 ? 3 : 0;
  if (shape & 4) e.cpl = static_cast<int8_t>(in.Byte());
  std::vector<std::string> callers, inlined;
  if (shape & 8) {
    const uint8_t frames = in.Byte();
    for (int k = 0; k < (frames & 3); ++k) callers.push_back(in.Function());
    for (int k = 0; k < ((frames >> 2) & 3); ++k) inlined.push_back(in.Function());
  }
  const uint8_t extras = shape & 16 ? in.Byte() : 0;
  const size_t choice = shape >> 5;
  e.address = 0x1000 + 16 * index;
  if (e.kind == Entry::Kind::kOpaque) {
    e.exit_via = choice < std::size(kExits) ? std::string(kExits[choice]) : in.Text();
    e.symbol = "main";
    e.exit_address = e.address + 0x14;
    e.exit_symbol = "main+0x14";
    const uint8_t emulated = in.Byte();
    if (emulated < 200) e.host_emulated = emulated % 3;
    if (emulated == 254) e.host_emulated = UINT64_MAX;
    if (emulated == 255) e.host_emulated = in.Number();
    if (extras & 128) e.host_emulation_failures = e.host_emulated;
  } else {
    if (extras & 64) {  // one of the seed counts' texts, or any
      const uint8_t pick = in.Byte();
      e.text = pick < std::size(kSeedTexts) ? std::string(kSeedTexts[pick]) : in.Text();
    } else {
      e.text = choice < std::size(kTexts) ? std::string(kTexts[choice]) : in.Text();
    }
    e.function = in.Function();
    e.symbol = e.function.empty() ? "0x1000" : e.function + "+0x4";
    // extras bit 7: a %gs-prefixed instruction (behind a lock prefix when bit 0 is set too).
    e.bytes = extras & 128 ? (extras & 1 ? std::vector<uint8_t>{0xf0, 0x65, 0xff, 0x00}
                                         : std::vector<uint8_t>{0x65, 0x48, 0x8b, 0x00})
                           : std::vector<uint8_t>{0x90};
    e.callers = std::move(callers);
    e.inlined = std::move(inlined);
    e.passes = kPasses[extras & 3];
    e.debug_register_write = extras & 4;
    e.debug_control_write = extras & 8;
    e.unstepped = extras & 16;
  }
  if (extras & 32) e.notes.push_back(in.Text());
  return e;
}

uint64_t CountOf(const Trace& t, size_t begin, size_t end) {
  uint64_t n = 0;
  for (size_t i = begin; i < end; ++i) {
    n = sigvisor::trace::AddCounts(n, sigvisor::trace::HostCount(t.entries[i]));
  }
  return n;
}

// What Analyze promises for any trace.
void CheckAnalysis(const Trace& t, const Analysis& a) {
  using sigvisor::trace::AddCounts;
  const size_t n = t.entries.size();
  Check(a.first_span_end <= a.last_pair_begin && a.last_pair_begin <= n);
  Check(a.phase_kernel_insns == CountOf(t, 0, n));
  Check(a.phase_distinct <= n);
  Check(a.ops.empty() != a.ops_note.empty());
  uint64_t in_ops = 0;
  if (!a.ops.empty()) {
    Check(t.complete && a.ops.size() == t.ops);
    // The ops tile [first_span_end, last_pair_begin), each non-empty.
    Check(a.ops.front().begin == a.first_span_end && a.ops.back().end == a.last_pair_begin);
    for (size_t k = 0; k < a.ops.size(); ++k) {
      const sigvisor::trace::OpSlice& op = a.ops[k];
      Check(op.begin < op.end);
      if (k + 1 < a.ops.size()) Check(op.end == a.ops[k + 1].begin);
      Check(op.kernel_insns == CountOf(t, op.begin, op.end));
      Check(op.distinct <= op.end - op.begin);
      in_ops = AddCounts(in_ops, op.kernel_insns);
    }
    Check(AddCounts(in_ops, a.marker_kernel_insns) == a.phase_kernel_insns);
  }
  const uint64_t profiled = a.ops.empty() ? a.phase_kernel_insns : a.ops[0].kernel_insns;
  uint64_t self = 0;
  for (const sigvisor::trace::FunctionRow& row : a.profile) {
    Check(row.self <= row.inclusive && row.inclusive <= profiled);
    self = AddCounts(self, row.self);
  }
  Check(self == profiled);
  Check(a.stages.empty() == a.ops.empty());
  uint64_t staged = 0;
  for (const sigvisor::trace::StageRow& row : a.stages) {
    Check(!row.stage.empty());
    staged = AddCounts(staged, row.kernel_insns);
  }
  if (!a.ops.empty()) Check(staged == a.ops[0].kernel_insns);
  Check(a.matches_ledger.has_value() == (t.ledger_kernel_insns && !a.ops.empty()));
  Check(a.ledger_marker == t.ledger_marker_kernel_insns);
}

void CheckFormats(const sigvisor::trace::TraceSource& source, const Trace& t, const Analysis& a) {
  const std::string listing = sigvisor::trace::FormatListing(t, a);
  Check(t.entries.empty() == listing.empty());
  const std::string summary = sigvisor::trace::FormatSummary(source, t, a);
  if (a.ops.empty()) Check(summary.find("ops: not separable (" + a.ops_note) != std::string::npos);
  const nlohmann::ordered_json doc = sigvisor::trace::TraceToJson(source, t, a);
  (void)doc.dump(2);  // as `sigvisor trace --json` prints it: throws on what is not UTF-8
  Check(doc["entries"].size() == t.entries.size());
  Check(doc["counts"]["per_op"].size() == a.ops.size());
}

nlohmann::ordered_json CheckDiff(const sigvisor::trace::TraceSource& source, const Trace& left,
                                 const Analysis& left_analysis, const Trace& right,
                                 const Analysis& right_analysis) {
  sigvisor::trace::TraceDiff d =
      sigvisor::trace::DiffTraces(source, left, left_analysis, source, right, right_analysis);
  Check(!d.text.empty());
  (void)d.json.dump();
  return std::move(d.json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t flags = in.Byte();
  const uint8_t ops_choice = in.Byte() % std::size(kOpCounts);
  const uint64_t ops = ops_choice + 1 == std::size(kOpCounts) ? in.Number() : kOpCounts[ops_choice];
  std::optional<uint64_t> ledger, ledger_marker;
  if (flags & 4) ledger = in.Count();
  if (flags & 8) ledger_marker = in.Count();
  const size_t first_entries = in.Byte();
  const size_t stage_begin = in.Byte(), stage_end = in.Byte();

  Trace traces[2];
  for (Trace& t : traces) {
    t.phase = "divzero";
    t.ops = ops;
    t.variant = "baseline";
    t.host_kind = flags & 32 ? "pvm" : "hardware";
    t.trap = sigvisor::TrapMechanism::kOff;
    if (flags & 16) t.opaque_reason = "CPL3 is not stepped here";
    t.complete = (flags & 3) != 0;
    if (!t.complete) t.stopped_why = "the step budget ran out";
    t.ledger_kernel_insns = ledger;
    t.ledger_marker_kernel_insns = ledger_marker;
  }
  if (flags & 64) traces[0].kernel = sigvisor::trace::Kernel::kLinux;
  if (flags & 128) traces[1].kernel = sigvisor::trace::Kernel::kLinux;
  for (size_t i = 0; i < kMaxEntries && !in.empty(); ++i) {
    Trace& t = i < first_entries ? traces[0] : traces[1];
    t.entries.push_back(ReadEntry(in, i));
    t.vmm_steps = t.entries.size();
  }

  const sigvisor::trace::TraceSource source{"kernel baseline (embedded)", "baseline",
                                            "workload=divzero"};
  Analysis analyses[2];
  for (int k = 0; k < 2; ++k) {
    analyses[k] = sigvisor::trace::Analyze(traces[k]);
    CheckAnalysis(traces[k], analyses[k]);
    CheckFormats(source, traces[k], analyses[k]);
  }
  std::vector<sigvisor::trace::StageRow> rows;
  const size_t n = traces[0].entries.size();
  const size_t clipped_end = std::min(stage_end, n);
  const size_t clipped_begin = std::min(stage_begin, clipped_end);
  Check(sigvisor::trace::ClassifyStages(traces[0], stage_begin, stage_end, &rows).size() ==
        clipped_end - clipped_begin);

  // The seed counts of op 1: by stage, they add up to the op's count.
  for (int k = 0; k < 2; ++k) {
    const std::optional<sigvisor::trace::OpCounts> counts =
        sigvisor::trace::CountOp(traces[k], analyses[k]);
    Check(counts.has_value() == !analyses[k].ops.empty());
    if (counts) {
      uint64_t by_stage = 0;
      for (const auto& [stage, n] : counts->stage_insns) {
        by_stage = sigvisor::trace::AddCounts(by_stage, n);
      }
      Check(by_stage == counts->kernel_insns);
      Check(counts->dr7_writes <= counts->dr_writes + traces[k].entries.size());
    }
    Check(!sigvisor::trace::CountOp(traces[k], analyses[k], analyses[k].ops.size()).has_value());
  }
  (void)sigvisor::trace::CountOp(traces[1], analyses[0]);  // another trace's ops: clipped

  CheckDiff(source, traces[0], analyses[0], traces[1], analyses[1]);
  CheckDiff(source, traces[1], analyses[1], traces[0], analyses[0]);
  // A trace against itself: every instruction of its first op aligned.
  const nlohmann::ordered_json same =
      CheckDiff(source, traces[0], analyses[0], traces[0], analyses[0]);
  if (!analyses[0].ops.empty()) {
    const sigvisor::trace::OpSlice& op = analyses[0].ops[0];
    Check(same["instructions"]["aligned"] == op.end - op.begin);
    Check(same["instructions"]["left_only"].empty() && same["instructions"]["right_only"].empty());
  }
  // The analysis of one trace formatted against another: the formatters clip what
  // they are handed to the entries they have.
  CheckFormats(source, traces[1], analyses[0]);
  CheckDiff(source, traces[1], analyses[0], traces[0], analyses[1]);
  return 0;
}
