#include "vmm/trace/analysis.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "guest-kit/abi/white_box.h"
#include "vmm/trace/linux_stages.h"
#include "vmm/trace/stages.h"

namespace sigvisor::trace {
namespace {

// A maximal run of kernel instructions, or of user code (opaque or stepped).
struct Segment {
  bool user = false;
  size_t begin = 0;
  size_t end = 0;
};

bool IsUser(const Entry& e) { return e.kind == Entry::Kind::kOpaque || e.cpl == 3; }

std::vector<Segment> Segments(const Trace& trace, size_t begin, size_t end) {
  std::vector<Segment> out;
  for (size_t i = begin; i < end; ++i) {
    const bool user = IsUser(trace.entries[i]);
    if (out.empty() || out.back().user != user) out.push_back(Segment{user, i, i});
    out.back().end = i + 1;
  }
  return out;
}

uint64_t Count(const Trace& trace, size_t begin, size_t end, uint64_t* distinct = nullptr) {
  uint64_t n = 0;
  for (size_t i = begin; i < end; ++i) {
    n = AddCounts(n, HostCount(trace.entries[i]));
    if (distinct != nullptr && trace.entries[i].kind == Entry::Kind::kInsn &&
        trace.entries[i].cpl == 0) {
      ++*distinct;
    }
  }
  return n;
}

// The bundled kernel's signal path, by function (innermost first wins). The names
// are the white-box contract's: a test checks every embedded kernel defines them.
struct StageRule {
  std::string_view function;
  std::string_view stage;
};
constexpr StageRule kStageRules[] = {
    {white_box::kSetDebugreg7, stage::kDr7Write},
    {white_box::kHandleSignal, stage::kFrameSetup},
    {white_box::kGetSignal, stage::kDequeue},
    {white_box::kSysRtSigreturn, stage::kSysRtSigreturn},
    {white_box::kUserException, stage::kSignalGeneration},
    {white_box::kForceSigFault, stage::kSignalGeneration},
    {white_box::kSendSignal, stage::kSignalGeneration},
    {white_box::kSysKill, stage::kSignalGeneration},
};
constexpr std::string_view kExitToUser = white_box::kExitToUserMode;

std::optional<std::string_view> RuleFor(const std::vector<std::string>& frames) {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    for (const StageRule& rule : kStageRules) {
      if (*it == rule.function) return rule.stage;
    }
  }
  return std::nullopt;
}

bool HasFrame(const Trace& trace, size_t begin, size_t end, std::string_view name) {
  for (size_t i = begin; i < end; ++i) {
    for (const std::string& f : Frames(trace.entries[i])) {
      if (f == name) return true;
    }
  }
  return false;
}

// The bundled kernel's stages of one kernel span [begin, end): by its white-box
// functions and by the events of its way out (below).
KernelSpanStages BundledKernelSpanStages(const Trace& trace, size_t begin, size_t end,
                                         std::string_view left_user_by) {
  KernelSpanStages span;
  span.labels.resize(end - begin);
  const bool sigreturn = HasFrame(trace, begin, end, white_box::kSysRtSigreturn);
  // Delivers a signal: calls get_signal, then runs handle_signal (inlined).
  span.delivers = HasFrame(trace, begin, end, white_box::kGetSignal) &&
                  HasFrame(trace, begin, end, white_box::kHandleSignal);
  std::string_view entry_label = stage::kKernelEntry, exit_label = stage::kReturnToUser;
  if (sigreturn) {
    entry_label = stage::kSigreturnEntry;
    exit_label = stage::kSigreturnExit;
  } else if (span.delivers) {
    const bool by_syscall = left_user_by.find("int $0x80") != std::string_view::npos;
    entry_label = by_syscall ? stage::kSyscallEntry : stage::kExceptionEntry;
    exit_label = stage::kReturnToHandler;
  }
  span.entry_label = std::string(entry_label);
  // The way out (exit_to_user_mode) is cut by events, not by function alone: the
  // compiler schedules an instruction of an inlined function wherever it likes
  // (even into exit_to_user_mode's prologue, which every return runs), so a
  // stage by DWARF range alone would see "frame setup" in a return that
  // delivers nothing. In a span that dequeues (calls get_signal):
  //   dequeue      from the way in (the pending check) to get_signal's result check
  //   DR7 write    what runs between dequeuing and delivering: seed 000's site
  //                (the write in dr7=always builds, the task's DR7 check in lazy ones)
  //   frame setup  handle_signal, to its last instruction
  //   the return   the rest.
  size_t exit_begin = end;
  std::optional<size_t> dequeued;   // the last instruction inside get_signal
  std::optional<size_t> delivered;  // the last one of handle_signal after it
  for (size_t i = begin; i < end; ++i) {
    const std::vector<std::string> frames = Frames(trace.entries[i]);
    auto has = [&](std::string_view f) {
      return std::find(frames.begin(), frames.end(), f) != frames.end();
    };
    if (exit_begin == end && has(kExitToUser)) exit_begin = i;
    if (i < exit_begin) continue;
    if (has(white_box::kGetSignal)) dequeued = i;
    if (dequeued && i > *dequeued && has(white_box::kHandleSignal)) delivered = i;
  }
  enum { kWayIn, kResultCheck, kBetween, kDelivering, kOut } phase = kWayIn;
  for (size_t i = begin; i < end; ++i) {
    const Entry& e = trace.entries[i];
    const std::vector<std::string> frames = Frames(e);
    auto has = [&](std::string_view f) {
      return std::find(frames.begin(), frames.end(), f) != frames.end();
    };
    std::string_view stage;
    if (i < exit_begin) {
      const std::optional<std::string_view> rule = RuleFor(frames);
      stage = rule && *rule != stage::kDequeue && *rule != stage::kFrameSetup &&
                      *rule != stage::kDr7Write
                  ? *rule
                  : entry_label;
    } else if (!dequeued) {
      stage = exit_label;
    } else {
      if (phase == kWayIn && i > *dequeued) phase = kResultCheck;
      if (phase == kResultCheck && has(white_box::kSetDebugreg7)) phase = kBetween;
      if ((phase == kResultCheck || phase == kBetween) && has(white_box::kHandleSignal)) {
        phase = kDelivering;
      }
      if (phase != kWayIn && (!delivered || i > *delivered)) phase = kOut;
      switch (phase) {
        case kWayIn:
          stage = stage::kDequeue;
          break;
        case kResultCheck: {
          stage = stage::kDequeue;
          const std::string_view text = e.text;
          if (text.starts_with("j") && !text.starts_with("jmp")) phase = kBetween;
          break;
        }
        case kBetween:
          stage = stage::kDr7Write;
          break;
        case kDelivering:
          stage = stage::kFrameSetup;
          break;
        case kOut:
          stage = exit_label;
          break;
      }
      if (has(white_box::kSetDebugreg7)) stage = stage::kDr7Write;
    }
    span.labels[i - begin] = std::string(stage);
  }
  return span;
}

}  // namespace

std::vector<std::string> Frames(const Entry& e) {
  if (e.kind == Entry::Kind::kOpaque) return {absl::StrCat("(CPL3: ", e.exit_via, ")")};
  std::vector<std::string> frames = e.callers;
  frames.push_back(e.function.empty() ? e.symbol : e.function);
  frames.insert(frames.end(), e.inlined.begin(), e.inlined.end());
  return frames;
}

uint64_t HostCount(const Entry& e) {
  if (e.kind == Entry::Kind::kOpaque) return e.host_emulated.value_or(0);
  return e.cpl == 0 ? e.passes : 0;
}

uint64_t AddCounts(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

std::vector<std::string> ClassifyStages(const Trace& trace, size_t begin, size_t end,
                                        std::vector<StageRow>* rows) {
  end = std::min(end, trace.entries.size());
  begin = std::min(begin, end);
  std::vector<std::string> labels(end - begin);
  std::vector<std::string> order;
  std::map<std::string, StageRow> by_stage;
  std::map<std::string, std::map<std::string, uint64_t>> functions;  // stage -> fn -> count
  auto add = [&](const std::string& stage, uint64_t n, bool opaque, const std::string& function) {
    auto [it, fresh] = by_stage.try_emplace(stage);
    if (fresh) {
      order.push_back(stage);
      it->second.stage = stage;
      it->second.opaque = opaque;
    }
    it->second.kernel_insns = AddCounts(it->second.kernel_insns, n);
    if (!function.empty() && n > 0) {
      uint64_t& by_function = functions[stage][function];
      by_function = AddCounts(by_function, n);
    }
  };

  bool previous_delivered = false;
  uint64_t carry = 0;  // the host's count of the user code just left (int $0x80)
  std::string carry_what;
  for (const Segment& seg : Segments(trace, begin, end)) {
    if (seg.user) {
      const std::string stage(previous_delivered ? stage::kHandler : stage::kUserCode);
      const Entry& last = trace.entries[seg.end - 1];
      add(stage, 0, true, "");
      StageRow& row = by_stage[stage];
      if (row.detail.empty() && last.kind == Entry::Kind::kOpaque) {
        row.detail = absl::StrCat(trace.entries[seg.begin].symbol, " .. ", last.exit_symbol,
                                  ", left by ", last.exit_via);
      }
      for (size_t i = seg.begin; i < seg.end; ++i) labels[i - begin] = stage;
      carry = Count(trace, seg.begin, seg.end);
      carry_what = last.kind == Entry::Kind::kOpaque ? last.exit_via : "";
      continue;
    }
    KernelSpanStages span = trace.kernel == Kernel::kLinux
                                ? LinuxKernelSpanStages(trace, seg.begin, seg.end, carry_what)
                                : BundledKernelSpanStages(trace, seg.begin, seg.end, carry_what);
    if (carry > 0) {
      add(span.entry_label, carry, false, absl::StrCat("(CPL3: ", carry_what, ")"));
      carry = 0;
    }
    for (size_t i = seg.begin; i < seg.end; ++i) {
      std::string& stage = span.labels[i - seg.begin];
      add(stage, HostCount(trace.entries[i]), false, Frames(trace.entries[i]).back());
      labels[i - begin] = std::move(stage);
    }
    previous_delivered = span.delivers;
  }
  if (rows != nullptr) {
    rows->clear();
    for (const std::string& stage : order) {
      StageRow row = by_stage[stage];
      if (!row.opaque) {
        std::vector<std::pair<uint64_t, std::string>> top;
        for (const auto& [fn, n] : functions[stage]) top.emplace_back(n, fn);
        std::stable_sort(top.begin(), top.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        std::vector<std::string> names;
        for (size_t k = 0; k < top.size() && k < 4; ++k) names.push_back(top[k].second);
        if (top.size() > 4) names.push_back("...");
        row.detail = absl::StrJoin(names, ", ");
      }
      rows->push_back(std::move(row));
    }
  }
  return labels;
}

Analysis Analyze(const Trace& trace) {
  Analysis a;
  const size_t n = trace.entries.size();
  a.phase_kernel_insns = Count(trace, 0, n, &a.phase_distinct);
  const std::vector<Segment> segments = Segments(trace, 0, n);

  // The first kernel span, then (user, kernel) pairs.
  size_t next = 0;
  if (!segments.empty() && !segments[0].user) {
    a.first_span_end = segments[0].end;
    next = 1;
  }
  std::vector<std::pair<size_t, size_t>> pairs;  // entry ranges
  for (size_t s = next; s < segments.size(); ++s) {
    if (segments[s].user) {
      const size_t pair_end = s + 1 < segments.size() ? segments[s + 1].end : segments[s].end;
      pairs.emplace_back(segments[s].begin, pair_end);
      if (s + 1 < segments.size()) ++s;
    }
  }
  a.last_pair_begin = pairs.empty() ? n : pairs.back().first;
  a.marker_kernel_insns =
      AddCounts(Count(trace, 0, a.first_span_end), Count(trace, a.last_pair_begin, n));

  // The ops' pairs: all but the END marker's. A trace that lost the ops' kernel path
  // (a hardware host's divzero, once, lost the signal delivery) can leave none, and
  // then there is nothing to cut, whatever the op count.
  const uint64_t op_pairs = pairs.empty() ? 0 : pairs.size() - 1;
  const std::string ops_wanted = absl::StrCat(trace.ops, trace.ops == 1 ? " op" : " ops");
  if (!trace.complete) {
    a.ops_note = "the trace did not reach the phase's END";
  } else if (trace.ops == 0) {
    a.ops_note = "the phase has no ops";
  } else if (n == 0) {
    a.ops_note = "the trace holds no instructions";
  } else if (pairs.empty()) {
    a.ops_note = absl::StrCat("the trace never leaves the kernel: no user code to cut into ",
                              ops_wanted);
  } else if (op_pairs == 0) {
    a.ops_note = absl::StrCat(
        "the trace's only stretch of user code and kernel is the END marker's: none is left "
        "for the phase's ",
        ops_wanted);
  } else if (op_pairs % trace.ops != 0) {  // also when fewer than the ops
    a.ops_note = absl::StrCat(op_pairs, op_pairs == 1 ? " stretch" : " stretches",
                              " of user code and kernel do not split evenly into ", ops_wanted);
  } else {
    // op_pairs is a non-zero multiple of ops: each op has per_op >= 1 pairs, and op
    // k's are pairs [k * per_op, (k + 1) * per_op), all below op_pairs.
    const uint64_t per_op = op_pairs / trace.ops;
    for (uint64_t first = 0; first < op_pairs; first += per_op) {
      OpSlice slice;
      slice.begin = pairs[first].first;
      slice.end = pairs[first + per_op - 1].second;
      slice.kernel_insns = Count(trace, slice.begin, slice.end, &slice.distinct);
      a.ops.push_back(slice);
    }
    a.ops_uniform = std::all_of(a.ops.begin(), a.ops.end(), [&](const OpSlice& s) {
      return s.kernel_insns == a.ops[0].kernel_insns;
    });
  }

  // The flat profile of the first op (or of the whole phase).
  const size_t pbegin = a.ops.empty() ? 0 : a.ops[0].begin;
  const size_t pend = a.ops.empty() ? n : a.ops[0].end;
  std::map<std::string, FunctionRow> rows;
  std::vector<std::string> first_seen;
  for (size_t i = pbegin; i < pend; ++i) {
    const Entry& e = trace.entries[i];
    const uint64_t count = HostCount(e);
    if (count == 0) continue;
    const std::vector<std::string> frames = Frames(e);
    std::set<std::string> seen;
    for (const std::string& f : frames) {
      auto [it, fresh] = rows.try_emplace(f);
      if (fresh) {
        it->second.function = f;
        first_seen.push_back(f);
      }
      if (seen.insert(f).second) it->second.inclusive = AddCounts(it->second.inclusive, count);
    }
    FunctionRow& innermost = rows[frames.back()];
    innermost.self = AddCounts(innermost.self, count);
  }
  for (const std::string& f : first_seen) a.profile.push_back(rows[f]);
  std::stable_sort(a.profile.begin(), a.profile.end(),
                   [](const FunctionRow& x, const FunctionRow& y) {
                     return x.inclusive > y.inclusive;
                   });
  if (!a.ops.empty()) ClassifyStages(trace, a.ops[0].begin, a.ops[0].end, &a.stages);

  // The check against the ledger.
  a.ledger_marker = trace.ledger_marker_kernel_insns;
  if (trace.ledger_kernel_insns && trace.ops > 0 && *trace.ledger_kernel_insns % trace.ops == 0) {
    a.ledger_per_op = *trace.ledger_kernel_insns / trace.ops;
  }
  if (trace.ledger_kernel_insns && !a.ops.empty()) {
    uint64_t sum = 0;
    bool each = true;
    for (const OpSlice& s : a.ops) {
      sum = AddCounts(sum, s.kernel_insns);
      if (a.ledger_per_op && s.kernel_insns != *a.ledger_per_op) each = false;
    }
    bool ok = sum == *trace.ledger_kernel_insns && each;
    if (a.ledger_marker) ok = ok && a.marker_kernel_insns == *a.ledger_marker;
    a.matches_ledger = ok;
  }
  return a;
}

}  // namespace sigvisor::trace
