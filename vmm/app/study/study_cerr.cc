// Seed 002 (x86, 2008): the signal frame code copied each field to user space with
// its own error check, ORed into a variable the compiler kept in memory (a store
// and an OR per field); the series makes the copies accumulate their error in a
// register ("cumulative error"). Its author reported smaller code ("reduces code
// size", signal_64.o text 4652 -> 3827 bytes, signal_32.o 5031 -> 4507), less stack
// ("also reduces stack usages"), and lmbench's sig hndl, 64-bit, 3.01 -> 2.96 us
// with sig inst unchanged at 0.32 us (3 runs each). Here: the baseline kernel against
// uaccess=cerr, lmbench's lat_sig install and catch, the signal object's `size`
// and gcc's stack usage of the frame set-up.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "guest-kit/abi/white_box.h"
#include "vmm/app/study/object_stats.h"
#include "vmm/app/study/study_internal.h"

namespace sigvisor::study {
namespace {

using json = nlohmann::ordered_json;

// ---- The seed's claims -------------------------------------------------------------

constexpr SeedClaim kHndlTime{Direction::kLower, 3.01e3, 2.96e3,
                              "lmbench sig hndl, 64-bit: 3.01 -> 2.96 us (3 runs each)"};
constexpr SeedClaim kInstTime{Direction::kSame, 0.32e3, 0.32e3,
                              "lmbench sig inst: 0.32 -> 0.32 us"};
constexpr SeedClaim kHndlInsns{Direction::kLower, std::nullopt, std::nullopt,
                               "fewer instructions per frame: no stores and ORs of err in memory"};
constexpr SeedClaim kInstInsns{Direction::kSame, std::nullopt, std::nullopt,
                               "sigaction builds no frame; sig inst did not move"};
constexpr SeedClaim kObjectText{Direction::kLower, 4652, 3827,
                                "size signal_64.o: text 4652 -> 3827 (32-bit: 5031 -> 4507)"};
constexpr SeedClaim kFrameStack{Direction::kLower, std::nullopt, std::nullopt,
                                "\"also reduces stack usages\""};
constexpr SeedClaim kTextBytes{Direction::kLower, std::nullopt, std::nullopt,
                               "the series \"reduces code size\""};

// The frame set-up function and the functions it may be inlined into, innermost
// first (the guest's signal.c: exit_to_user_mode -> handle_signal -> setup_rt_frame
// -> setup_sigcontext).
constexpr std::string_view kFrameSetupChain[] = {white_box::kSetupRtFrame, white_box::kHandleSignal,
                                                 white_box::kExitToUserMode};

// The function whose stack holds the frame set-up in both builds: setup_rt_frame, or
// the function it is inlined into; "" if gcc reported none of them.
std::string FrameSetupHolder(const ObjectStats& a, const ObjectStats& b) {
  for (std::string_view name : kFrameSetupChain) {
    if (a.FindStack(name) && b.FindStack(name)) return std::string(name);
  }
  return "";
}

// ---- The figures --------------------------------------------------------------------

void AddFigures(StudyContext& ctx, const ObjectStats* a, const ObjectStats* b) {
  for (TrapMechanism trap : ctx.bench.matrix.traps) {
    AddTime(ctx, "sig_inst", trap, TimeStat::kMedian, "time (median)", kInstTime);
    AddCount(ctx, "sig_inst", trap, "kernel_insns_per_op", "kernel instructions",
             Unit::kInstructions, Insns, kInstInsns);
    AddKvmExits(ctx, "sig_inst", trap);
    AddTime(ctx, "sig_hndl", trap, TimeStat::kMedian, "time (median)", kHndlTime);
    AddCount(ctx, "sig_hndl", trap, "kernel_insns_per_op", "kernel instructions",
             Unit::kInstructions, Insns, kHndlInsns);
    AddKvmExits(ctx, "sig_hndl", trap);
  }
  if (a && b) {
    AddStatic(ctx, "object_text_bytes", "signal.o text (bytes)", Unit::kBytes, double(a->text),
              double(b->text), kObjectText);
    const std::string holder = FrameSetupHolder(*a, *b);
    if (!holder.empty()) {
      AddStatic(ctx, "frame_setup_stack_bytes", absl::StrFormat("stack of %s (bytes)", holder),
                Unit::kBytes, double(a->FindStack(holder)->bytes),
                double(b->FindStack(holder)->bytes), kFrameStack);
    }
    // The same data, as the static JSON.
    json stack = json::array();
    for (const StackUsage& s : a->stack) {
      const StackUsage* n = b->FindStack(s.function);
      if (!n) continue;
      stack.push_back({{"function", s.function},
                       {"old_bytes", s.bytes},
                       {"new_bytes", n->bytes},
                       {"old_qualifier", s.qualifier},
                       {"new_qualifier", n->qualifier}});
    }
    ctx.extra["object"] = {{"file", a->file},
                           {"old",
                            {{"variant", a->variant},
                             {"text", a->text},
                             {"data", a->data},
                             {"bss", a->bss},
                             {"dec", a->dec()}}},
                           {"new",
                            {{"variant", b->variant},
                             {"text", b->text},
                             {"data", b->data},
                             {"bss", b->bss},
                             {"dec", b->dec()}}}};
    ctx.extra["stack_usage"] = stack;
    ctx.extra["frame_setup_function"] = {
        {"name", std::string(kFrameSetupChain[0])},
        {"measured_in", holder.empty() ? json(nullptr) : json(holder)},
        {"inlined", !holder.empty() && holder != kFrameSetupChain[0]}};
  }
  AddTextBytes(ctx, kTextBytes);
}

// ---- The seed's tables: lmbench's, `size`'s and the stack usage -------------------------

// lmbench's table: one row per run, times in microseconds.
std::string LmbenchTable(const StudyContext& ctx) {
  std::string out = "\nProcessor, Processes - times in microseconds - smaller is better\n";
  for (TrapMechanism trap : ctx.bench.matrix.traps) {
    absl::StrAppendFormat(&out, "(%s)\n", TrapNote(trap, ctx.bench.host));
    out += "------------------------------------------------------------\n";
    absl::StrAppendFormat(&out, "%-26s %-12s %7s %7s\n", "Host", "OS", "sig", "sig");
    absl::StrAppendFormat(&out, "%-26s %-12s %7s %7s\n", "", "", "inst", "hndl");
    out += "-------------------------- ------------ ------- -------\n";
    for (size_t which : {size_t{1}, size_t{0}}) {  // the seed lists the patched kernel first
      const bench::Cell* inst = ctx.Get("sig_inst", which, trap);
      const bench::Cell* hndl = ctx.Get("sig_hndl", which, trap);
      if (!inst || !hndl) continue;
      const std::vector<const bench::PhaseSample*> i = PhaseSamples(*inst), h = PhaseSamples(*hndl);
      for (size_t r = 0; r < std::min(i.size(), h.size()); ++r) {
        // A time the marker calibration swallowed: "-", as lmbench leaves a blank.
        auto us = [](const bench::PhaseSample& p) {
          return p.wall_ns ? absl::StrFormat("%7.1f", double(*p.wall_ns) / double(p.ops) / 1e3)
                           : absl::StrFormat("%7s", "-");
        };
        absl::StrAppendFormat(&out, "%-26s %-12s %s %s\n", ctx.bench.matrix.variants[which].name,
                              "sigvisor", us(*i[r]), us(*h[r]));
      }
    }
  }
  return out;
}

// `size` of the two signal objects and their functions' stack usage.
std::string ObjectTables(const ObjectStats* a, const ObjectStats* b) {
  if (!a || !b) return "\n(no object statistics for these builds)\n";
  std::string out =
      "\n$ size signal_*   (arch/x86_64/guest/signal.c as the kernel build compiles it)\n";
  absl::StrAppendFormat(&out, "%7s\t%7s\t%7s\t%7s\t%7s\t%s\n", "text", "data", "bss", "dec", "hex",
                        "filename");
  for (const ObjectStats* s : {b, a}) {
    absl::StrAppendFormat(&out, "%7d\t%7d\t%7d\t%7d\t%7x\t%s.%s (%s)\n", s->text, s->data, s->bss,
                          s->dec(), s->dec(), s->file, s == b ? "new" : "old", s->variant);
  }
  absl::StrAppendFormat(&out,
                        "(the seed: signal_64.o 4652 -> 3827 text, signal_32.o 5031 -> 4507)\n");

  // The frame set-up function's stack, or that of the function it is inlined into.
  const std::string holder = FrameSetupHolder(*a, *b);
  out += "\nstack usage (gcc -fstack-usage on the same compile):\n";
  absl::StrAppendFormat(&out, "  %-24s %10s %10s %8s\n", "function", "old", "new", "delta");
  for (const StackUsage& s : a->stack) {
    const StackUsage* n = b->FindStack(s.function);
    if (!n) continue;
    absl::StrAppendFormat(
        &out, "  %-24s %10s %10s %+8d%s\n", s.function,
        absl::StrFormat("%d %s", s.bytes, s.qualifier == "static" ? "" : s.qualifier),
        absl::StrFormat("%d %s", n->bytes, n->qualifier == "static" ? "" : n->qualifier),
        int64_t(n->bytes) - int64_t(s.bytes),
        s.function == holder && holder != kFrameSetupChain[0]
            ? "  <- holds setup_rt_frame (inlined)"
            : (s.function == holder ? "  <- the frame set-up function" : ""));
  }
  if (!holder.empty() && holder != kFrameSetupChain[0]) {
    absl::StrAppendFormat(&out,
                          "  setup_rt_frame (and setup_sigcontext) are inlined: gcc reports no "
                          "stack of their own; %s's frame holds theirs.\n",
                          holder);
  }
  return out;
}

// ---- What the figures mean -------------------------------------------------------------

void AddNotes(StudyContext& ctx) {
  const TrapMechanism trap =
      ctx.bench.matrix.traps.empty() ? TrapMechanism::kOff : ctx.bench.matrix.traps[0];
  const Comparison* hndl = FindComparison(ctx, "kernel_insns_per_op", "sig_hndl", trap);
  const Comparison* inst = FindComparison(ctx, "kernel_insns_per_op", "sig_inst", trap);
  if (hndl && hndl->change() < 0) {
    absl::StrAppendFormat(&ctx.notes,
                          "Per delivered signal cerr saves %s kernel instructions (%s): each user "
                          "store of the frame (and each load of sigreturn) no longer keeps its "
                          "error in memory to be ORed together at the end.\n",
                          Num(-hndl->change()), Percent(hndl->change_percent() / 100));
  }
  if (inst && inst->change() != 0) {
    absl::StrAppendFormat(&ctx.notes,
                          "sig_inst delivers no signal, yet moves by %s instructions: the code "
                          "every return to user mode runs, exit_to_user_mode (which holds the "
                          "inlined frame set-up), is compiled differently in the two builds "
                          "(compare `objdump -d` of the two signal objects).\n",
                          SignedNum(inst->change()));
  }
}

void Analyze(StudyContext& ctx) {
  const ObjectStats* a = SignalObjectStats(ctx.old_name());
  const ObjectStats* b = SignalObjectStats(ctx.new_name());
  AddFigures(ctx, a, b);
  ctx.text += LmbenchTable(ctx);
  ctx.text += ObjectTables(a, b);
  ctx.text += ComparisonTable(
      ctx, "op (sig_inst: one sigaction; sig_hndl: one signal sent to self and handled)");
  AddNotes(ctx);
}

}  // namespace

// A lat_sig install + signal costs ~1 ms on this project's PVM hosts.
StudyDef CerrStudy() {
  return {.name = "cerr",
          .seed = "002",
          .title = "cumulative-error user copies in the signal frame code",
          .workload = "lat_sig",
          .old_variant = "baseline",
          .new_variant = "uaccess=cerr",
          .default_ops = 300,
          .default_repetitions = 15,
          .default_traps = {TrapMechanism::kOff},
          .analyze = Analyze};
}

}  // namespace sigvisor::study
