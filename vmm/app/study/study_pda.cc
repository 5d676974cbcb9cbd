// Seed 001 (i386, 2006): the per-CPU data area was reached through %gs, loaded on
// every kernel entry and restored on exit; the patch, for uniprocessor kernels, leaves
// %gs untouched and reaches the data directly. Its author reported "a kernel text size
// reduction of 3400 bytes" and, for 10 million write+read pairs on a pipe, a best of
// 10 runs of 12.811 s before and 12.212 s after. Here: the baseline kernel (pda=gs)
// against pda=direct, with segment loads not trapping (off) and trapping (patch).
#include <cmath>
#include <string>

#include "absl/strings/str_format.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/study/study_internal.h"

namespace sigvisor::study {
namespace {

constexpr std::string_view kPhase = "pipe_rw";

// ---- The seed's claims -------------------------------------------------------------

constexpr SeedClaim kBestTime{Direction::kLower, 12.811e9 / 1e7, 12.212e9 / 1e7,
                              "10 million write+read pairs on a pipe: best of 10 runs 12.811 -> "
                              "12.212 s"};
constexpr SeedClaim kLower{Direction::kLower, std::nullopt, std::nullopt,
                           "\"reduce kernel text size and also give better performance\""};
constexpr SeedClaim kSegmentLoads{
    Direction::kLower, std::nullopt, std::nullopt,
    "the seed's wish: on UP, leave %gs untouched in entry.S (syscall entry/exit)"};
constexpr SeedClaim kExits{Direction::kLower, std::nullopt, std::nullopt,
                           "segment loads are what a trapping VMM exits on"};
constexpr SeedClaim kTextBytes{Direction::kLower, std::nullopt, std::nullopt,
                               "\"a kernel text size reduction of 3400 bytes\""};

// ---- The figures --------------------------------------------------------------------

void AddFigures(StudyContext& ctx) {
  for (TrapMechanism trap : ctx.bench.matrix.traps) {
    AddTime(ctx, kPhase, trap, TimeStat::kMin, "time per iteration (best run)", kBestTime);
    AddTime(ctx, kPhase, trap, TimeStat::kMedian, "time per iteration (median)", kLower);
    AddCount(ctx, kPhase, trap, "kernel_insns_per_op", "kernel instructions", Unit::kInstructions,
             Insns, kLower);
    if (trap == TrapMechanism::kOff) {
      AddKvmExits(ctx, kPhase, trap);  // no exit reaches the VMM; KVM still takes some
      continue;
    }
    // An iteration is two system calls.
    AddCount(
        ctx, kPhase, trap, "segment_load_traps_per_syscall", "segment-load traps per syscall",
        Unit::kTraps, [](const bench::PerOpCounts& c) { return Kind(c, "segment_load"); },
        kSegmentLoads, 2);
    AddCount(ctx, kPhase, trap, "exits_per_op", "VM exits", Unit::kExits, Exits, kExits);
    AddKvmExits(ctx, kPhase, trap);
  }
  AddTextBytes(ctx, kTextBytes);
}

// ---- The seed's table: best run of each build, and the text size ------------------------

std::string SeedTable(const StudyContext& ctx) {
  std::string out;
  for (TrapMechanism trap : ctx.bench.matrix.traps) {
    const bench::Cell* a = ctx.Get(kPhase, 0, trap);
    const bench::Cell* b = ctx.Get(kPhase, 1, trap);
    absl::StrAppendFormat(&out,
                          "\npipe_rw: %d iterations of write(fd[1], &c, 1); read(fd[0], &c, 1) per "
                          "run, %s:\n",
                          ctx.bench.matrix.ops, TrapNote(trap, ctx.bench.host));
    if (!a || !b || a->ns.n == 0 || b->ns.n == 0) {
      out += "  (not measured for both builds)\n";
      continue;
    }
    const double best_a = a->ns.min * double(a->ops), best_b = b->ns.min * double(b->ops);
    absl::StrAppendFormat(&out,
                          "The best elap time I got for this program on %d runs was : %s (%s)\n",
                          a->samples.size(), bench::FormatNs(best_a), ctx.old_name());
    absl::StrAppendFormat(
        &out, "With the change (%s), I got %s (%s; the seed: 12.811 s -> 12.212 s, -4.7%%)\n",
        ctx.new_name(), bench::FormatNs(best_b), Percent(best_b / best_a - 1));
  }
  const double text_a = double(TextBytes(ctx, 0)), text_b = double(TextBytes(ctx, 1));
  absl::StrAppendFormat(&out,
                        "Kernel text: %s bytes (%s) -> %s bytes (%s): a size %s of %s bytes (the "
                        "seed: a reduction of 3400 bytes)\n",
                        Num(text_a), ctx.old_name(), Num(text_b), ctx.new_name(),
                        text_b <= text_a ? "reduction" : "increase",
                        Num(std::fabs(text_a - text_b)));
  return out;
}

// ---- What the figures mean -------------------------------------------------------------

void AddNotes(StudyContext& ctx) {
  const Comparison* insns = FindComparison(ctx, "kernel_insns_per_op", kPhase, TrapMechanism::kOff);
  if (insns && insns->change() < 0) {
    absl::StrAppendFormat(
        &ctx.notes,
        "Without traps the direct build saves %s kernel instructions per "
        "iteration (%s per system call): %%gs-relative per-CPU accesses become "
        "plain loads and stores, and entry and exit no longer swap the GS base.\n",
        Num(-insns->change()), Num(-insns->change() / 2));
  }
  const Comparison* seg =
      FindComparison(ctx, "segment_load_traps_per_syscall", kPhase, TrapMechanism::kPatch);
  const Comparison* time = FindComparison(ctx, "ns_per_op_median", kPhase, TrapMechanism::kPatch);
  if (seg && seg->change() < 0 && time) {
    absl::StrAppendFormat(
        &ctx.notes,
        "Where segment loads trap (patch), pda=gs pays %s GS-base load%s (swapgs) "
        "per system call, one VM exit each, and pda=direct none: %s time per "
        "iteration%s.\n",
        Num(seg->old_value), seg->old_value == 1 ? "" : "s", Percent(time->change_percent() / 100),
        time->significant() == true ? "" : " (" + time->Evidence() + ")");
  }
  const double text_a = double(TextBytes(ctx, 0)), text_b = double(TextBytes(ctx, 1));
  if (text_b < text_a) {
    absl::StrAppendFormat(&ctx.notes,
                          "The text shrinks by %s bytes, against the seed's 3400: this kernel has "
                          "%s bytes of text in all, not a 2006 Linux's megabytes.\n",
                          Num(text_a - text_b), Num(text_a));
  }
}

void Analyze(StudyContext& ctx) {
  AddFigures(ctx);
  ctx.text += SeedTable(ctx);
  ctx.text += ComparisonTable(ctx, "iteration (one write and one read: two system calls)");
  AddNotes(ctx);
}

}  // namespace

// A pipe_rw iteration costs ~0.5 ms on this project's PVM hosts.
StudyDef PdaStudy() {
  return {.name = "pda",
          .seed = "001",
          .title = "per-CPU data through %gs, loaded on every kernel entry",
          .workload = "pipe_rw",
          .old_variant = "baseline",
          .new_variant = "pda=direct",
          .default_ops = 500,
          .default_repetitions = 15,
          .default_traps = {TrapMechanism::kOff, TrapMechanism::kPatch},
          .analyze = Analyze};
}

}  // namespace sigvisor::study
