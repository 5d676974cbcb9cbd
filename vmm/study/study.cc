#include "vmm/study/study.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/bench/bench_format.h"
#include "vmm/bench/stats.h"
#include "vmm/images/embedded_images.h"
#include "vmm/report/csv.h"
#include "vmm/report/svg_chart.h"
#include "vmm/study/bloat.h"
#include "vmm/study/object_stats.h"

namespace sigvisor::study {
namespace {

using json = nlohmann::ordered_json;
using bench::BenchResult;
using bench::Cell;
using bench::FormatNs;

// Defaults keep `sigvisor study all` to a minute or two on this project's
// PVM hosts (guest CPL0 at ~1 us per instruction): a divzero signal costs ~0.8 ms, a
// pipe_rw iteration ~0.5 ms, a lat_sig install + signal ~1 ms, a sigpingpong round
// trip ~2.5 ms. Counts are exact for any ops; times need repetitions, not length.
const std::vector<StudyDef>& AllStudies() {
  static const std::vector<StudyDef> kStudies = {
      {"dr7", "000", "a DR7 write on every signal delivery", "divzero", "baseline", "dr7=lazy",
       300, 20, {"off", "patch", "pv"}},
      {"pda", "001", "per-CPU data through %gs, loaded on every kernel entry", "pipe_rw",
       "baseline", "pda=direct", 500, 15, {"off", "patch"}},
      {"cerr", "002", "cumulative-error user copies in the signal frame code", "lat_sig",
       "baseline", "uaccess=cerr", 300, 15, {"off"}},
      {"dequeue", "003", "dequeue_signal hands out the queue entry instead of a siginfo copy",
       "sigpingpong", "baseline", "dequeue=pointer", 100, 50, {"off"}},
  };
  return kStudies;
}

constexpr double kSignificance = 0.05;

// In a per-run listing, a run whose time the marker calibration swallowed.
constexpr std::string_view kTimeNotMeasured = "time not measured (below the marker calibration's noise)";

// ---- Formatting helpers --------------------------------------------------------

std::string Num(double v) {
  if (std::isnan(v)) return "-";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.2f", v);
}

std::string SignedNum(double v) {
  if (v == 0) return "0";
  return (v > 0 ? "+" : "") + Num(v);
}

std::string Value(const Comparison& c, double v) {
  if (c.unit == "ns") return FormatNs(v);
  return Num(v);
}

std::string Percent(double fraction) {
  if (std::isnan(fraction) || std::isinf(fraction)) return "-";
  if (std::fabs(fraction) < 0.0005) return "0.0%";
  return absl::StrFormat("%+.1f%%", 100 * fraction);
}

// ---- One study's data ------------------------------------------------------------

struct Ctx {
  const StudyDef& def;
  const BenchResult& bench;
  std::vector<Cell> cells;
  std::vector<Comparison> comparisons;
  std::string text;
  json extra = json::object();
  std::string notes;  // explanations printed under the VM-level table

  const std::string& old_name() const { return bench.matrix.variants[0].name; }
  const std::string& new_name() const { return bench.matrix.variants[1].name; }

  // The cell of `phase` for the old (0) or new (1) build under `trap`, or nullptr
  // when no run measured it.
  const Cell* Get(std::string_view phase, size_t which, std::string_view trap) const {
    const Cell* cell = bench::FindCell(cells, bench, def.workload, phase,
                                       bench.matrix.variants[which].name, trap);
    return cell != nullptr && !cell->samples.empty() ? cell : nullptr;
  }
  bool Has(std::string_view phase, std::string_view trap) const {
    return Get(phase, 0, trap) && Get(phase, 1, trap);
  }
  bool HasTrap(std::string_view trap) const {
    const auto& traps = bench.matrix.traps;
    return std::find(traps.begin(), traps.end(), trap) != traps.end();
  }
};

struct SeedClaim {
  std::string direction;  // "lower", "higher", "same", ""
  std::optional<double> old_value, new_value;
  std::string note;
};

enum class TimeStat { kMedian, kMin, kMean };

// Per-op time of a phase, old against new; p from the runs.
void AddTime(Ctx& ctx, std::string_view phase, std::string_view trap, TimeStat stat,
             std::string label, SeedClaim seed) {
  const Cell* a = ctx.Get(phase, 0, trap);
  const Cell* b = ctx.Get(phase, 1, trap);
  // No measured time on one side (the calibration swallowed every run's): no
  // figure; the study's warnings say so.
  if (!a || !b || a->ns.n == 0 || b->ns.n == 0) return;
  Comparison c;
  c.metric = stat == TimeStat::kMin    ? "ns_per_op_min"
             : stat == TimeStat::kMean ? "ns_per_op_mean"
                                       : "ns_per_op_median";
  c.label = std::move(label);
  c.phase = std::string(phase);
  c.trap = std::string(trap);
  c.unit = "ns";
  auto pick = [stat](const bench::Summary& s) {
    return stat == TimeStat::kMin ? s.min : stat == TimeStat::kMean ? s.mean : s.median;
  };
  c.old_value = pick(a->ns);
  c.new_value = pick(b->ns);
  c.p_value = bench::MannWhitneyP(a->ns_per_op, b->ns_per_op);
  c.p_floor = bench::MannWhitneyMinP(a->ns_per_op.size(), b->ns_per_op.size());
  c.seed_direction = seed.direction;
  c.seed_old = seed.old_value;
  c.seed_new = seed.new_value;
  c.seed_note = seed.note;
  ctx.comparisons.push_back(std::move(c));
}

// An exact per-op count of a phase (divided by `per`: 2 for "per syscall" when an
// op is two system calls).
void AddCount(Ctx& ctx, std::string_view phase, std::string_view trap, std::string metric,
              std::string label, std::string unit,
              const std::function<std::optional<double>(const bench::PerOpCounts&)>& get,
              SeedClaim seed, double per = 1) {
  const Cell* a = ctx.Get(phase, 0, trap);
  const Cell* b = ctx.Get(phase, 1, trap);
  if (!a || !b) return;
  std::optional<double> old_value = get(a->per_op), new_value = get(b->per_op);
  if (!old_value || !new_value) return;
  Comparison c;
  c.metric = std::move(metric);
  c.label = std::move(label);
  c.phase = std::string(phase);
  c.trap = std::string(trap);
  c.unit = std::move(unit);
  c.old_value = *old_value / per;
  c.new_value = *new_value / per;
  c.exact = true;
  c.seed_direction = seed.direction;
  c.seed_old = seed.old_value;
  c.seed_new = seed.new_value;
  c.seed_note = seed.note;
  ctx.comparisons.push_back(std::move(c));
}

void AddStatic(Ctx& ctx, std::string metric, std::string label, std::string unit, double old_value,
               double new_value, SeedClaim seed) {
  Comparison c;
  c.metric = std::move(metric);
  c.label = std::move(label);
  c.unit = std::move(unit);
  c.old_value = old_value;
  c.new_value = new_value;
  c.exact = true;
  c.seed_direction = seed.direction;
  c.seed_old = seed.old_value;
  c.seed_new = seed.new_value;
  c.seed_note = seed.note;
  ctx.comparisons.push_back(std::move(c));
}

std::optional<double> Insns(const bench::PerOpCounts& c) { return c.kernel_insns; }
std::optional<double> Exits(const bench::PerOpCounts& c) { return c.exits; }
std::optional<double> Kind(const bench::PerOpCounts& c, const char* kind) {
  return c.traps_by_kind.at(kind);
}

// The per-run phase times of one cell, for a seed-shaped listing.
std::vector<const bench::PhaseSample*> PhaseSamples(const Cell& cell) {
  std::vector<const bench::PhaseSample*> out;
  for (const bench::RunSample* run : cell.samples) {
    for (const bench::PhaseSample& p : run->phases) {
      if (p.name == cell.phase) out.push_back(&p);
    }
  }
  return out;
}

// ---- Text pieces -------------------------------------------------------------------

std::string Header(const Ctx& ctx) {
  const bench::Matrix& m = ctx.bench.matrix;
  std::vector<std::string> traps;
  for (const std::string& t : m.traps) traps.push_back(t);
  return absl::StrFormat(
      "== study %s (seed %s): %s ==\n"
      "%s (%s) against %s (%s)\n"
      "workload %s: %d ops per run, %d runs of each variant per trap mechanism (%s), "
      "variants alternating\n%s\n",
      ctx.def.name, ctx.def.seed, ctx.def.title, ctx.old_name(), m.variants[0].settings,
      ctx.new_name(), m.variants[1].settings, ctx.def.workload, m.ops, m.repetitions,
      absl::StrJoin(traps, ", "), bench::CompletenessLine(ctx.bench));
}

// What `trap` means on the host the study ran on: with nothing trapping, privileged
// instructions run as the rest of guest CPL0 does there, emulated on a PVM host and
// on the CPU on a hardware one.
std::string TrapNote(std::string_view trap, const bench::HostInfoSummary& host) {
  if (trap == "off") {
    return host.cpl0_emulated
               ? "trap off: nothing traps; privileged instructions run emulated with the rest "
                 "of guest CPL0"
               : "trap off: nothing traps to the VMM; privileged instructions run on the CPU "
                 "with the rest of guest CPL0 (KVM handles any it intercepts itself)";
  }
  if (trap == "patch") return "trap patch: DR accesses and segment loads trap to the VMM (one exit each), as under a hypervisor that intercepts them";
  if (trap == "pv") return "trap pv: each build's debugreg=pv counterpart writes its debug registers into the VMM's page and counts them there (no exit; a hypercall only to load a breakpoint), as a paravirtual kernel does";
  return absl::StrFormat("trap %s", trap);
}

// The VM-level table: every comparison of the study, grouped by trap.
std::string ComparisonTable(const Ctx& ctx, std::string_view per) {
  std::string out = absl::StrFormat("\nVM-level figures, per %s (%s -> %s):\n", per, ctx.old_name(),
                                    ctx.new_name());
  absl::StrAppendFormat(&out, "  %-38s %12s %12s %10s %9s  %s\n", "", "old", "new", "change", "",
                        "against the seed");
  std::string group = "\x01";
  for (const Comparison& c : ctx.comparisons) {
    const std::string g = c.trap.empty() ? "static (the images)" : "trap " + c.trap;
    if (g != group) {
      group = g;
      absl::StrAppendFormat(&out, "  %s\n", g);
    }
    std::string label = c.label;
    if (!c.phase.empty() && c.phase != ctx.def.workload) label = c.phase + ": " + label;
    const std::string change =
        c.unit == "ns" ? Percent(c.change_percent() / 100) : SignedNum(c.change());
    const std::string percent = c.unit == "ns" || c.old_value == 0
                                    ? ""
                                    : absl::StrFormat("(%s)", Percent(c.change_percent() / 100));
    absl::StrAppendFormat(&out, "    %-36s %12s %12s %10s %9s  %s\n", label, Value(c, c.old_value),
                          Value(c, c.new_value), change, percent, c.Verdict());
  }
  return out;
}

std::string Findings(const Ctx& ctx) {
  std::string out;
  for (const Comparison& c : ctx.comparisons) {
    if (c.agrees() != false) continue;
    std::string where = c.trap.empty() ? "" : absl::StrFormat(" (trap %s)", c.trap);
    if (!c.phase.empty() && c.phase != ctx.def.workload) where = " in " + c.phase + where;
    absl::StrAppendFormat(&out, "FINDING: %s%s: %s -> %s (%s) goes against the seed (%s%s)\n",
                          c.label, where, Value(c, c.old_value), Value(c, c.new_value),
                          c.unit == "ns" ? Percent(c.change_percent() / 100) : SignedNum(c.change()),
                          c.seed_direction == "same" ? "no change" : c.seed_direction,
                          c.seed_note.empty() ? "" : ": " + c.seed_note);
  }
  return out;
}

std::string SpeedupLine(const Comparison* c, std::string_view seed_text) {
  if (c == nullptr) return "";
  const double speedup = c->old_value / c->new_value - 1;
  return absl::StrFormat("That's about a %s speedup (%s; %s); the seed: %s.\n",
                         Percent(speedup), c->Evidence(), c->metric == "ns_per_op_min" ? "best run" : "median run",
                         seed_text);
}

const Comparison* FindComparison(const Ctx& ctx, std::string_view metric, std::string_view phase,
                                 std::string_view trap) {
  for (const Comparison& c : ctx.comparisons) {
    if (c.metric == metric && c.phase == phase && c.trap == trap) return &c;
  }
  return nullptr;
}

uint64_t TextBytes(const Ctx& ctx, size_t which) { return ctx.bench.matrix.variants[which].text_bytes; }

void AddTextBytes(Ctx& ctx, SeedClaim seed) {
  ctx.extra["text_bytes"] = {{"old", TextBytes(ctx, 0)}, {"new", TextBytes(ctx, 1)}};
  AddStatic(ctx, "text_bytes", "kernel text (bytes)", "bytes", double(TextBytes(ctx, 0)),
            double(TextBytes(ctx, 1)), std::move(seed));
}

// ---- dr7 (seed 000) --------------------------------------------------------------

void Dr7(Ctx& ctx) {
  const std::string phase = "divzero";
  const SeedClaim seed_time{"lower", 7.501e9 / 3e6, 5.692e9 / 3e6,
                            "divzero, 3 million divide by zeros: 7.501 -> 5.692 s real, mean of 5 "
                            "runs; \"about a 33% speedup\""};
  const SeedClaim seed_insns{"lower", std::nullopt, std::nullopt,
                             "the seed times the path; fewer instructions is its direction"};
  for (const std::string& trap : ctx.bench.matrix.traps) {
    AddTime(ctx, phase, trap, TimeStat::kMedian, "time per signal (median)", seed_time);
    AddCount(ctx, phase, trap, "kernel_insns_per_op", "kernel instructions", "instructions", Insns,
             seed_insns);
    if (trap != "off") {
      // Under pv no DR7 write exits, so the seed's exit saving has nothing to say there.
      AddCount(ctx, phase, trap, "exits_per_op", "VM exits", "exits", Exits,
               trap == "pv" ? SeedClaim{}
                            : SeedClaim{"lower", std::nullopt, std::nullopt,
                                        "the DR7 write is what a trapping VMM exits on"});
      AddCount(ctx, phase, trap, "dr_write_traps_per_op", "DR write traps", "traps",
               [](const bench::PerOpCounts& c) { return Kind(c, "dr_write"); },
               {"lower", 1, 0, "one unconditional mov to %db7 per delivery, then none"});
      AddCount(ctx, phase, trap, "segment_load_traps_per_op", "segment-load traps", "traps",
               [](const bench::PerOpCounts& c) { return Kind(c, "segment_load"); }, {});
      AddCount(ctx, phase, trap, "dr_loads_per_op", "hardware DR loads", "loads",
               [](const bench::PerOpCounts& c) { return std::optional<double>(c.dr_loads); }, {});
    }
  }
  AddTextBytes(ctx, {});

  std::string& out = ctx.text;
  for (const std::string& trap : ctx.bench.matrix.traps) {
    const Cell* a = ctx.Get(phase, 0, trap);
    const Cell* b = ctx.Get(phase, 1, trap);
    absl::StrAppendFormat(&out,
                          "\nPerformance test using divzero microbenchmark (%d divide by zeros "
                          "per run), %s:\n",
                          ctx.bench.matrix.ops, TrapNote(trap, ctx.bench.host));
    for (auto [cell, title] : {std::pair{a, "With unconditional write"}, {b, "With unlikely write"}}) {
      absl::StrAppendFormat(&out, "%s (%s):\n", title, cell ? ctx.bench.matrix.variants[cell->variant].name : "-");
      if (!cell) {
        out += "  (no completed run)\n";
        continue;
      }
      for (const bench::PhaseSample* p : PhaseSamples(*cell)) {
        absl::StrAppendFormat(&out, "  %s / %s kernel insns\n",
                              p->wall_ns ? absl::StrFormat("%.3f ms real", double(*p->wall_ns) / 1e6)
                                         : std::string(kTimeNotMeasured),
                              p->kernel_insns ? absl::StrFormat("%d", *p->kernel_insns) : "-");
      }
    }
    out += SpeedupLine(FindComparison(ctx, "ns_per_op_median", phase, trap), "about 33% (Xeon)");
  }
  out += ComparisonTable(ctx, "signal");

  const Comparison* insns = FindComparison(ctx, "kernel_insns_per_op", phase, "off");
  if (insns && insns->change() > 0) {
    absl::StrAppendFormat(
        &ctx.notes,
        "Note: the lazy build runs %s kernel instruction%s more per signal, not fewer: its check\n"
        "(load the task's DR7, test, branch) replaces the one `mov %%db7`. Guest CPL0 runs\n"
        "emulated here at about the same cost per instruction, so the serialising mov that\n"
        "cost the seed's Xeon a third of its signal path is nothing special unless it traps.\n",
        Num(insns->change()), insns->change() == 1 ? "" : "s");
  }
  const Comparison* dr = FindComparison(ctx, "dr_write_traps_per_op", phase, "patch");
  const Comparison* time = FindComparison(ctx, "ns_per_op_median", phase, "patch");
  if (dr && dr->change() < 0) {
    absl::StrAppendFormat(
        &ctx.notes,
        "Where DR writes trap to the VMM (patch), the lazy build saves %s DR write trap%s (VM\n"
        "exit%s) per signal%s.\n",
        Num(-dr->change()), dr->change() == -1 ? "" : "s", dr->change() == -1 ? "" : "s",
        time == nullptr ? ""
        : time->significant() == true
            ? absl::StrFormat(": %s time per signal (%s)", Percent(time->change_percent() / 100),
                              time->Evidence())
            : absl::StrFormat("; what that does to the time (%s) shows no more than the "
                              "run-to-run noise here: %s",
                              Percent(time->change_percent() / 100), time->Evidence()));
  }
  // Under pv the unconditional write is a call into the VMM's page rather than one
  // instruction: the seed's saving comes back, in instructions instead of a stall.
  const Comparison* pv_insns = FindComparison(ctx, "kernel_insns_per_op", phase, "pv");
  const Comparison* pv_dr = FindComparison(ctx, "dr_write_traps_per_op", phase, "pv");
  if (pv_insns && pv_insns->change() < 0 && pv_dr && pv_dr->change() < 0) {
    absl::StrAppendFormat(
        &ctx.notes,
        "Under pv no DR write exits: the kernel writes the VMM's page instead, and the lazy\n"
        "build's skipped write saves %s kernel instruction%s per signal (the call that records\n"
        "it), the seed's direction.\n",
        Num(-pv_insns->change()), pv_insns->change() == -1 ? "" : "s");
  }
}

// ---- pda (seed 001) ---------------------------------------------------------------

void Pda(Ctx& ctx) {
  const std::string phase = "pipe_rw";
  const SeedClaim seed_best{"lower", 12.811e9 / 1e7, 12.212e9 / 1e7,
                            "10 million write+read pairs on a pipe: best of 10 runs 12.811 -> "
                            "12.212 s"};
  const SeedClaim seed_lower{"lower", std::nullopt, std::nullopt,
                             "\"reduce kernel text size and also give better performance\""};
  for (const std::string& trap : ctx.bench.matrix.traps) {
    AddTime(ctx, phase, trap, TimeStat::kMin, "time per iteration (best run)", seed_best);
    AddTime(ctx, phase, trap, TimeStat::kMedian, "time per iteration (median)", seed_lower);
    AddCount(ctx, phase, trap, "kernel_insns_per_op", "kernel instructions", "instructions", Insns,
             seed_lower);
    if (trap != "off") {
      AddCount(ctx, phase, trap, "segment_load_traps_per_syscall",
               "segment-load traps per syscall", "traps",
               [](const bench::PerOpCounts& c) { return Kind(c, "segment_load"); },
               {"lower", std::nullopt, std::nullopt,
                "the seed's wish: on UP, leave %gs untouched in entry.S (syscall entry/exit)"},
               2);
      AddCount(ctx, phase, trap, "exits_per_op", "VM exits", "exits", Exits,
               {"lower", std::nullopt, std::nullopt, "segment loads are what a trapping VMM exits on"});
    }
  }
  AddTextBytes(ctx, {"lower", std::nullopt, std::nullopt, "\"a kernel text size reduction of 3400 bytes\""});

  std::string& out = ctx.text;
  for (const std::string& trap : ctx.bench.matrix.traps) {
    const Cell* a = ctx.Get(phase, 0, trap);
    const Cell* b = ctx.Get(phase, 1, trap);
    absl::StrAppendFormat(&out,
                          "\npipe_rw: %d iterations of write(fd[1], &c, 1); read(fd[0], &c, 1) per "
                          "run, %s:\n",
                          ctx.bench.matrix.ops, TrapNote(trap, ctx.bench.host));
    if (!a || !b || a->ns.n == 0 || b->ns.n == 0) {
      out += "  (not measured for both builds)\n";
      continue;
    }
    const double best_a = a->ns.min * double(a->ops), best_b = b->ns.min * double(b->ops);
    absl::StrAppendFormat(&out, "The best elap time I got for this program on %d runs was : %s (%s)\n",
                          a->samples.size(), FormatNs(best_a), ctx.old_name());
    absl::StrAppendFormat(&out, "With the change (%s), I got %s (%s; the seed: 12.811 s -> 12.212 s, -4.7%%)\n",
                          ctx.new_name(), FormatNs(best_b), Percent(best_b / best_a - 1));
  }
  const double text_a = double(TextBytes(ctx, 0)), text_b = double(TextBytes(ctx, 1));
  absl::StrAppendFormat(&out,
                        "Kernel text: %s bytes (%s) -> %s bytes (%s): a size %s of %s bytes (the "
                        "seed: a reduction of 3400 bytes)\n",
                        Num(text_a), ctx.old_name(), Num(text_b), ctx.new_name(),
                        text_b <= text_a ? "reduction" : "increase", Num(std::fabs(text_a - text_b)));
  out += ComparisonTable(ctx, "iteration (one write and one read: two system calls)");

  const Comparison* insns = FindComparison(ctx, "kernel_insns_per_op", phase, "off");
  if (insns && insns->change() < 0) {
    absl::StrAppendFormat(&ctx.notes,
                          "Without traps the direct build saves %s kernel instructions per "
                          "iteration (%s per system call): %%gs-relative per-CPU accesses become "
                          "plain loads and stores, and entry and exit no longer swap the GS base.\n",
                          Num(-insns->change()), Num(-insns->change() / 2));
  }
  const Comparison* seg = FindComparison(ctx, "segment_load_traps_per_syscall", phase, "patch");
  const Comparison* time = FindComparison(ctx, "ns_per_op_median", phase, "patch");
  if (seg && seg->change() < 0 && time) {
    absl::StrAppendFormat(&ctx.notes,
                          "Where segment loads trap (patch), pda=gs pays %s GS-base load%s (swapgs) "
                          "per system call, one VM exit each, and pda=direct none: %s time per "
                          "iteration%s.\n",
                          Num(seg->old_value), seg->old_value == 1 ? "" : "s",
                          Percent(time->change_percent() / 100),
                          time->significant() == true ? "" : " (" + time->Evidence() + ")");
  }
  if (text_b < text_a) {
    absl::StrAppendFormat(&ctx.notes,
                          "The text shrinks by %s bytes, against the seed's 3400: this kernel has "
                          "%s bytes of text in all, not a 2006 Linux's megabytes.\n",
                          Num(text_a - text_b), Num(text_a));
  }
}

// ---- cerr (seed 002) ---------------------------------------------------------------

// The frame set-up function and the functions it may be inlined into, innermost
// first (arch/x86_64/guest/signal.c: exit_to_user_mode -> handle_signal ->
// setup_rt_frame -> setup_sigcontext).
constexpr const char* kFrameSetupChain[] = {"setup_rt_frame", "handle_signal", "exit_to_user_mode"};

void Cerr(Ctx& ctx) {
  const SeedClaim seed_hndl{"lower", 3.01e3, 2.96e3,
                            "lmbench sig hndl, 64-bit: 3.01 -> 2.96 us (3 runs each)"};
  const SeedClaim seed_inst{"same", 0.32e3, 0.32e3, "lmbench sig inst: 0.32 -> 0.32 us"};
  const SeedClaim seed_insns_hndl{"lower", std::nullopt, std::nullopt,
                                  "fewer instructions per frame: no stores and ORs of err in memory"};
  const SeedClaim seed_insns_inst{"same", std::nullopt, std::nullopt,
                                  "sigaction builds no frame; sig inst did not move"};
  for (const std::string& trap : ctx.bench.matrix.traps) {
    AddTime(ctx, "sig_inst", trap, TimeStat::kMedian, "time (median)", seed_inst);
    AddCount(ctx, "sig_inst", trap, "kernel_insns_per_op", "kernel instructions", "instructions",
             Insns, seed_insns_inst);
    AddTime(ctx, "sig_hndl", trap, TimeStat::kMedian, "time (median)", seed_hndl);
    AddCount(ctx, "sig_hndl", trap, "kernel_insns_per_op", "kernel instructions", "instructions",
             Insns, seed_insns_hndl);
  }
  const ObjectStats* a = SignalObjectStats(ctx.old_name());
  const ObjectStats* b = SignalObjectStats(ctx.new_name());
  std::string& out = ctx.text;

  // lmbench's table: one row per run, times in microseconds.
  out += "\nProcessor, Processes - times in microseconds - smaller is better\n";
  for (const std::string& trap : ctx.bench.matrix.traps) {
    absl::StrAppendFormat(&out, "(%s)\n", TrapNote(trap, ctx.bench.host));
    out += "------------------------------------------------------------\n";
    absl::StrAppendFormat(&out, "%-26s %-12s %7s %7s\n", "Host", "OS", "sig", "sig");
    absl::StrAppendFormat(&out, "%-26s %-12s %7s %7s\n", "", "", "inst", "hndl");
    out += "-------------------------- ------------ ------- -------\n";
    for (size_t which : {size_t{1}, size_t{0}}) {  // the seed lists the patched kernel first
      const Cell* inst = ctx.Get("sig_inst", which, trap);
      const Cell* hndl = ctx.Get("sig_hndl", which, trap);
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

  if (a && b) {
    out += "\n$ size signal_*   (arch/x86_64/guest/signal.c as the kernel build compiles it)\n";
    absl::StrAppendFormat(&out, "%7s\t%7s\t%7s\t%7s\t%7s\t%s\n", "text", "data", "bss", "dec", "hex",
                          "filename");
    for (const ObjectStats* s : {b, a}) {
      absl::StrAppendFormat(&out, "%7d\t%7d\t%7d\t%7d\t%7x\t%s.%s (%s)\n", s->text, s->data, s->bss,
                            s->dec(), s->dec(), s->file, s == b ? "new" : "old", s->variant);
    }
    absl::StrAppendFormat(&out, "(the seed: signal_64.o 4652 -> 3827 text, signal_32.o 5031 -> 4507)\n");
    AddStatic(ctx, "object_text_bytes", "signal.o text (bytes)", "bytes", double(a->text),
              double(b->text),
              {"lower", 4652, 3827, "size signal_64.o: text 4652 -> 3827 (32-bit: 5031 -> 4507)"});

    // The frame set-up function's stack, or that of the function it is inlined into.
    std::string holder;
    for (const char* name : kFrameSetupChain) {
      if (a->FindStack(name) && b->FindStack(name)) {
        holder = name;
        break;
      }
    }
    json stack = json::array();
    out += "\nstack usage (gcc -fstack-usage on the same compile):\n";
    absl::StrAppendFormat(&out, "  %-24s %10s %10s %8s\n", "function", "old", "new", "delta");
    for (const StackUsage& s : a->stack) {
      const StackUsage* n = b->FindStack(s.function);
      if (!n) continue;
      absl::StrAppendFormat(&out, "  %-24s %10s %10s %+8d%s\n", s.function,
                            absl::StrFormat("%d %s", s.bytes, s.qualifier == "static" ? "" : s.qualifier),
                            absl::StrFormat("%d %s", n->bytes, n->qualifier == "static" ? "" : n->qualifier),
                            int64_t(n->bytes) - int64_t(s.bytes),
                            s.function == holder && holder != kFrameSetupChain[0]
                                ? "  <- holds setup_rt_frame (inlined)"
                                : (s.function == holder ? "  <- the frame set-up function" : ""));
      stack.push_back({{"function", s.function},
                       {"old_bytes", s.bytes},
                       {"new_bytes", n->bytes},
                       {"old_qualifier", s.qualifier},
                       {"new_qualifier", n->qualifier}});
    }
    if (!holder.empty()) {
      if (holder != kFrameSetupChain[0]) {
        absl::StrAppendFormat(&out,
                              "  setup_rt_frame (and setup_sigcontext) are inlined: gcc reports no "
                              "stack of their own; %s's frame holds theirs.\n",
                              holder);
      }
      AddStatic(ctx, "frame_setup_stack_bytes",
                absl::StrFormat("stack of %s (bytes)", holder), "bytes",
                double(a->FindStack(holder)->bytes), double(b->FindStack(holder)->bytes),
                {"lower", std::nullopt, std::nullopt, "\"also reduces stack usages\""});
    }
    ctx.extra["object"] = {
        {"file", a->file},
        {"old", {{"variant", a->variant}, {"text", a->text}, {"data", a->data}, {"bss", a->bss}, {"dec", a->dec()}}},
        {"new", {{"variant", b->variant}, {"text", b->text}, {"data", b->data}, {"bss", b->bss}, {"dec", b->dec()}}}};
    ctx.extra["stack_usage"] = stack;
    ctx.extra["frame_setup_function"] = {
        {"name", kFrameSetupChain[0]},
        {"measured_in", holder.empty() ? json(nullptr) : json(holder)},
        {"inlined", !holder.empty() && holder != kFrameSetupChain[0]}};
  } else {
    out += "\n(no object statistics for these builds)\n";
  }
  AddTextBytes(ctx, {"lower", std::nullopt, std::nullopt, "the series \"reduces code size\""});
  out += ComparisonTable(ctx, "op (sig_inst: one sigaction; sig_hndl: one signal sent to self and handled)");

  const std::string trap = ctx.bench.matrix.traps.empty() ? "off" : ctx.bench.matrix.traps[0];
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

// ---- dequeue (seed 003) -------------------------------------------------------------

void Dequeue(Ctx& ctx) {
  const std::string phase = "sigpingpong";
  const SeedClaim seed_time{"higher", 3.0785 / 655360 * 2 * 1e9, 3.1408 / 655360 * 2 * 1e9,
                            "CPU time for 655360 SIGUSR1/SIGUSR2 ping-pong signals, mean of 100: "
                            "3.0785 -> 3.1408 s (+2.02%)"};
  const SeedClaim seed_insns{"higher", std::nullopt, std::nullopt,
                             "the seed's slowdown: \"an extra level of indirection\""};
  for (const std::string& trap : ctx.bench.matrix.traps) {
    AddTime(ctx, phase, trap, TimeStat::kMean, "time per round trip (mean)", seed_time);
    AddCount(ctx, phase, trap, "kernel_insns_per_op", "kernel instructions", "instructions", Insns,
             seed_insns);
    if (trap != "off") {
      AddCount(ctx, phase, trap, "exits_per_op", "VM exits", "exits", Exits, {});
    }
  }
  AddTextBytes(ctx, {"lower", std::nullopt, std::nullopt, "bloat-o-meter: -457 bytes (x86 32-bit)"});

  std::string& out = ctx.text;
  for (const std::string& trap : ctx.bench.matrix.traps) {
    const Cell* a = ctx.Get(phase, 0, trap);
    const Cell* b = ctx.Get(phase, 1, trap);
    absl::StrAppendFormat(&out, "\n(%s)\n", TrapNote(trap, ctx.bench.host));
    if (!a || !b || a->ns.n == 0 || b->ns.n == 0) {
      out += "  (not measured for both builds)\n";
      continue;
    }
    // Whole-run times in milliseconds, as the seed gives whole-run CPU seconds; runs
    // whose time is not measured are left out.
    auto run_ms = [](const Cell& c) {
      std::vector<double> ms;
      for (const bench::PhaseSample* p : PhaseSamples(c)) {
        if (p->wall_ns) ms.push_back(double(*p->wall_ns) / 1e6);
      }
      return bench::Summarize(ms);
    };
    const bench::Summary sa = run_ms(*a), sb = run_ms(*b);
    absl::StrAppendFormat(&out, "              %-15s %-15s\n", "unpatched", "patched");
    out += "----------------------------------------\n";
    absl::StrAppendFormat(&out, "mean:         %-15.6f %-15.6f\n", sa.mean, sb.mean);
    absl::StrAppendFormat(&out, "stddev:       %-15.6f %-15.6f\n", sa.stddev, sb.stddev);
    absl::StrAppendFormat(&out,
                          "(Numbers are: wall time in milliseconds, for two processes to "
                          "ping-pong in total %d SIGUSR1/SIGUSR2 signals between each other. This "
                          "was repeated %d times for each kernel: unpatched %s, patched %s.)\n",
                          2 * ctx.bench.matrix.ops, std::min(sa.n, sb.n), ctx.old_name(),
                          ctx.new_name());
    absl::StrAppendFormat(&out, "That is a %s relative change in time (the seed: +2.02%%).\n",
                          Percent(sb.mean / sa.mean - 1));
  }

  // bloat-o-meter over the two kernels' symbol tables.
  absl::StatusOr<const KernelVariant*> old_build = ResolveVariant(ctx.old_name());
  absl::StatusOr<const KernelVariant*> new_build = ResolveVariant(ctx.new_name());
  if (old_build.ok() && new_build.ok()) {
    absl::StatusOr<ElfImage> old_elf = ParseKernel(**old_build), new_elf = ParseKernel(**new_build);
    if (old_elf.ok() && new_elf.ok()) {
      const BloatReport bloat = CompareSymbols(old_elf->symbols(), new_elf->symbols());
      absl::StrAppendFormat(&out, "\n$ scripts/bloat-o-meter kernel-%s kernel-%s\n%s",
                            ctx.old_name(), ctx.new_name(), FormatBloat(bloat));
      out += "(the seed, x86 32-bit: add/remove: 0/0 grow/shrink: 3/7 up/down: 81/-538 (-457))\n";
      json rows = json::array();
      for (const BloatRow& row : bloat.rows) {
        rows.push_back({{"name", row.name}, {"old", row.old_bytes}, {"new", row.new_bytes},
                        {"delta", row.delta()}});
      }
      ctx.extra["bloat"] = {{"add", bloat.added}, {"remove", bloat.removed},
                            {"grow", bloat.grown}, {"shrink", bloat.shrunk},
                            {"up", bloat.up},     {"down", bloat.down},
                            {"total", bloat.total()}, {"rows", rows}};
      AddStatic(ctx, "symbol_bytes", "sized symbols, all (bytes)", "bytes",
                double(bloat.old_total), double(bloat.new_total),
                {"lower", std::nullopt, std::nullopt, "bloat-o-meter: (-457)"});
    }
  }
  out += ComparisonTable(ctx, "round trip (SIGUSR1 there, SIGUSR2 back: two signals)");

  const Comparison* insns = FindComparison(ctx, "kernel_insns_per_op", phase, "off");
  if (insns && insns->change() < 0) {
    absl::StrAppendFormat(&ctx.notes,
                          "The pointer build runs %s fewer kernel instructions per round trip "
                          "(%s fewer per signal): delivery no longer copies the siginfo out of the "
                          "queue entry. The seed saw a 2.02%% slowdown and blamed an extra level "
                          "of indirection; here the copy saved outweighs it.\n",
                          Num(-insns->change()), Num(-insns->change() / 2));
  }
  if (ctx.extra.contains("bloat")) {
    std::vector<std::string> added;
    for (const auto& row : ctx.extra["bloat"]["rows"]) {
      if (row["old"].get<int64_t>() == 0) {
        added.push_back(absl::StrFormat("%s (%d bytes)", row["name"].get<std::string>(),
                                        row["new"].get<int64_t>()));
      }
    }
    if (ctx.extra["bloat"]["total"].get<int64_t>() > 0) {
      absl::StrAppendFormat(&ctx.notes,
                            "The kernel grows by %d bytes of symbols where the seed's shrank by "
                            "457%s.\n",
                            ctx.extra["bloat"]["total"].get<int64_t>(),
                            added.empty() ? "" : "; new: " + absl::StrJoin(added, ", "));
    }
  }
}

}  // namespace

// ---- Comparison -----------------------------------------------------------------------

double Comparison::change_percent() const {
  if (old_value == 0) return new_value == 0 ? 0 : NAN;
  return 100 * (new_value - old_value) / old_value;
}

std::string Comparison::direction() const {
  if (new_value < old_value) return "lower";
  if (new_value > old_value) return "higher";
  return "same";
}

std::optional<bool> Comparison::significant() const {
  if (exact) return std::nullopt;
  if (too_few_runs()) return false;
  return p_value && *p_value < kSignificance;
}

bool Comparison::too_few_runs() const {
  return !exact && p_floor && *p_floor >= kSignificance;
}

std::optional<bool> Comparison::agrees() const {
  if (seed_direction.empty()) return std::nullopt;
  if (exact) return direction() == seed_direction;
  if (significant() != true) return std::nullopt;
  return direction() == seed_direction;  // a significant change: never "same"
}

std::string Comparison::Verdict() const {
  if (seed_direction.empty()) return "the seed does not say";
  const std::string seed = seed_direction == "same" ? "no change" : seed_direction;
  const std::optional<bool> a = agrees();
  if (!a) return absl::StrFormat("%s; the seed: %s", Evidence(), seed);
  const std::string p = exact ? "" : absl::StrFormat("p=%.2g", p_value.value_or(1));
  if (*a) return p.empty() ? "agrees with the seed" : absl::StrFormat("agrees with the seed (%s)", p);
  return absl::StrFormat("GOES AGAINST THE SEED (%s%s): a finding", p.empty() ? "" : p + "; ",
                         "the seed: " + seed);
}

std::string Comparison::Evidence() const {
  if (exact) return "exact";
  if (too_few_runs()) {
    return absl::StrFormat("too few runs for significance (p cannot go below %.2g)", *p_floor);
  }
  const double p = p_value.value_or(1);
  if (p < kSignificance) return absl::StrFormat("p=%.2g", p);
  return absl::StrFormat("no evidence either way (p=%.2g)", p);
}

// ---- Studies ----------------------------------------------------------------------------

std::span<const StudyDef> Studies() { return AllStudies(); }

const StudyDef* FindStudy(std::string_view name) {
  for (const StudyDef& s : AllStudies()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

absl::StatusOr<std::vector<const StudyDef*>> ParseStudyNames(std::span<const std::string> names) {
  std::vector<std::string> known;
  for (const StudyDef& s : AllStudies()) known.emplace_back(s.name);
  const std::string choices = absl::StrJoin(known, ", ") + " or all";
  if (names.empty()) {
    return absl::InvalidArgumentError("`sigvisor study` needs a study: " + choices);
  }
  std::vector<const StudyDef*> out;
  for (const std::string& name : names) {
    if (name == "all") {
      if (names.size() > 1) {
        return absl::InvalidArgumentError("`sigvisor study all` takes no other study name");
      }
      for (const StudyDef& s : AllStudies()) out.push_back(&s);
      continue;
    }
    const StudyDef* study = FindStudy(name);
    if (study == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("no study '%s' (give %s)", name, choices));
    }
    if (std::find(out.begin(), out.end(), study) != out.end()) {
      return absl::InvalidArgumentError(absl::StrFormat("study '%s' is named twice", name));
    }
    out.push_back(study);
  }
  return out;
}

absl::StatusOr<bench::Matrix> StudyMatrix(const StudyDef& study, std::optional<uint64_t> ops,
                                          std::optional<uint32_t> repetitions,
                                          const std::vector<std::string>& traps,
                                          uint32_t memory_mib) {
  bench::Matrix m;
  m.workloads = {std::string(study.workload)};
  for (std::string_view spec : {study.old_variant, study.new_variant}) {
    absl::StatusOr<bench::VariantInfo> info = bench::DescribeBuiltVariant(spec);
    if (!info.ok()) return info.status();
    m.variants.push_back(*std::move(info));
  }
  if (traps.empty()) {
    for (std::string_view t : study.default_traps) m.traps.emplace_back(t);
  } else {
    m.traps = traps;
  }
  m.ops = ops.value_or(study.default_ops);
  m.repetitions = repetitions.value_or(study.default_repetitions);
  m.memory_mib = memory_mib;
  return m;
}

StudyReport AnalyzeStudy(const StudyDef& study, bench::BenchResult result) {
  StudyReport report;
  report.def = &study;
  report.bench = std::move(result);
  Ctx ctx{study, report.bench, bench::Cells(report.bench), {}, "", json::object(), ""};
  ctx.text = Header(ctx);
  if (study.name == "dr7") Dr7(ctx);
  else if (study.name == "pda") Pda(ctx);
  else if (study.name == "cerr") Cerr(ctx);
  else if (study.name == "dequeue") Dequeue(ctx);
  if (!ctx.notes.empty()) ctx.text += "\n" + ctx.notes;
  std::string findings = Findings(ctx);
  if (!findings.empty()) ctx.text += "\n" + findings;
  for (const Cell& cell : ctx.cells) {
    for (const std::string& mismatch : cell.mismatches) {
      ctx.text += absl::StrFormat("WARNING: counts differ across repetitions (%s, %s, trap %s): %s\n",
                                  cell.phase, report.bench.matrix.variants[cell.variant].name,
                                  report.bench.matrix.traps[cell.trap], mismatch);
    }
    for (const std::string& note : bench::TimeNotes(cell)) {
      ctx.text += absl::StrFormat("WARNING: %s, %s, trap %s: %s\n", cell.phase,
                                  report.bench.matrix.variants[cell.variant].name,
                                  report.bench.matrix.traps[cell.trap], note);
    }
  }
  for (const std::string& w : report.bench.warnings) ctx.text += "warning: " + w + "\n";
  if (!report.bench.complete()) ctx.text += bench::CompletenessLine(report.bench) + "\n";
  report.comparisons = std::move(ctx.comparisons);
  report.text = std::move(ctx.text);
  report.extra = std::move(ctx.extra);
  return report;
}

namespace {

json Optional(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json ComparisonToJson(const Comparison& c) {
  const std::optional<bool> agrees = c.agrees();
  json seed = nullptr;
  if (!c.seed_direction.empty()) {
    seed = {{"direction", c.seed_direction},
            {"old", Optional(c.seed_old)},
            {"new", Optional(c.seed_new)},
            {"note", c.seed_note}};
  }
  const double percent = c.change_percent();
  return {{"metric", c.metric},
          {"label", c.label},
          {"phase", c.phase.empty() ? json(nullptr) : json(c.phase)},
          {"trap", c.trap.empty() ? json(nullptr) : json(c.trap)},
          {"unit", c.unit},
          {"old", c.old_value},
          {"new", c.new_value},
          {"change", c.change()},
          {"change_percent", std::isnan(percent) ? json(nullptr) : json(percent)},
          {"exact", c.exact},
          {"p_value", Optional(c.p_value)},
          {"direction", c.direction()},
          {"significant", c.significant() ? json(*c.significant()) : json(nullptr)},
          {"seed", seed},
          {"agrees", agrees ? json(*agrees) : json(nullptr)},
          {"verdict", c.Verdict()}};
}

}  // namespace

nlohmann::ordered_json StudyToJson(const StudyReport& report) {
  const StudyDef& d = *report.def;
  const bench::Matrix& m = report.bench.matrix;
  json comparisons = json::array();
  for (const Comparison& c : report.comparisons) comparisons.push_back(ComparisonToJson(c));
  auto variant = [](const bench::VariantInfo& v) {
    return json{{"name", v.name}, {"settings", v.settings}, {"text_bytes", v.text_bytes}};
  };
  return {{"name", d.name},
          {"seed", d.seed},
          {"title", d.title},
          {"workload", d.workload},
          {"old_variant", m.variants.size() > 0 ? variant(m.variants[0]) : json(nullptr)},
          {"new_variant", m.variants.size() > 1 ? variant(m.variants[1]) : json(nullptr)},
          {"complete", report.complete()},
          {"comparisons", comparisons},
          {"static", report.extra},
          {"text", report.text},
          {"bench", bench::BenchToJson(report.bench)}};
}

nlohmann::ordered_json StudiesToJson(const std::vector<StudyReport>& reports,
                                     const std::vector<std::string>& not_run) {
  json studies = json::array();
  bool complete = not_run.empty();
  json host = nullptr;
  for (const StudyReport& r : reports) {
    studies.push_back(StudyToJson(r));
    complete = complete && r.complete();
    host = {{"kind", r.bench.host.kind}, {"cpl0_emulated", r.bench.host.cpl0_emulated}};
  }
  return {{"schema", kStudySchema},
          {"complete", complete},
          {"host", host},
          {"studies", studies},
          {"studies_not_run", not_run}};
}

std::string StudiesToCsv(const std::vector<StudyReport>& reports) {
  CsvWriter csv({"study", "seed", "metric", "label", "phase", "trap", "unit", "old_variant",
                 "new_variant", "old", "new", "change", "change_percent", "p_value", "exact",
                 "significant", "seed_direction", "seed_old", "seed_new", "agrees", "verdict"});
  for (const StudyReport& r : reports) {
    const bench::Matrix& m = r.bench.matrix;
    for (const Comparison& c : r.comparisons) {
      const std::optional<bool> agrees = c.agrees();
      csv.AddRow({std::string(r.def->name), std::string(r.def->seed), c.metric, c.label, c.phase,
                  c.trap, c.unit, m.variants[0].name, m.variants[1].name,
                  CsvWriter::Number(c.old_value, 1), CsvWriter::Number(c.new_value, 1),
                  CsvWriter::Number(c.change(), 1), CsvWriter::Number(c.change_percent(), 3),
                  c.p_value ? CsvWriter::Number(*c.p_value, 6) : "", c.exact ? "true" : "false",
                  c.significant() ? (*c.significant() ? "true" : "false") : "", c.seed_direction,
                  c.seed_old ? CsvWriter::Number(*c.seed_old, 3) : "",
                  c.seed_new ? CsvWriter::Number(*c.seed_new, 3) : "",
                  agrees ? (*agrees ? "true" : "false") : "", c.Verdict()});
    }
  }
  return csv.str();
}

std::string StudiesToSvg(const std::vector<StudyReport>& reports) {
  std::vector<ChartSection> sections;
  for (const StudyReport& r : reports) {
    const bench::Matrix& m = r.bench.matrix;
    ChartSection section;
    section.heading = absl::StrFormat("study %s (seed %s): %s", r.def->name, r.def->seed, r.def->title);
    section.note = absl::StrFormat("%s, %d ops per run, %d runs per variant%s", r.def->workload, m.ops,
                                   m.repetitions, r.complete() ? "" : " (INCOMPLETE)");
    const std::vector<Cell> cells = bench::Cells(r.bench);
    for (const Cell& cell : cells) {
      if (cell.variant != 0) continue;
      const Cell* other = bench::FindCell(cells, r.bench, m.workloads[cell.workload], cell.phase,
                                          m.variants[1].name, m.traps[cell.trap]);
      ChartPanel panel;
      panel.title = absl::StrFormat("%s, trap %s", cell.phase, m.traps[cell.trap]);
      panel.axis = "us per op: median over runs, whiskers min - max; on the bar: time / old build's";
      for (const Cell* c : {&cell, other}) {
        if (c == nullptr) continue;
        panel.bars.push_back(bench::TimeBar(
            m.variants[c->variant].name, *c, &cell.ns,
            c->per_op.kernel_insns ? absl::StrFormat(", %s kernel insns", Num(*c->per_op.kernel_insns))
                                   : ""));
      }
      section.panels.push_back(std::move(panel));
    }
    sections.push_back(std::move(section));
  }
  return RenderBarChartSvg("sigvisor study: the seeds' experiments, per-op cost per variant", sections);
}

}  // namespace sigvisor::study
