// pvsig: no seed's change but this project's own question. A kernel built with
// signal=pv (guest-kit/abi/sigvisor_abi.h, "Signal frames built by the VMM") does not
// write a signal's rt frame on the user stack itself (setup_rt_frame) nor read it back
// at rt_sigreturn (restore_sigcontext): it makes one hypercall each way and the VMM
// does it. Per signal that is fewer kernel instructions (828 -> 556 per divzero op in
// `sigvisor trace` on the hardware lane) for two port-I/O exits the baseline does not
// take. Which wins is a property of the host: where guest CPL0 is emulated (PVM, ~1 us
// an instruction) kernel instructions are dear and an exit costs ~10-30 us; on
// hardware KVM instructions are nearly free and an exit costs a microsecond or so.
// Here: the baseline kernel against signal=pv on divzero, nothing trapping, and the
// crossover below.
//
// The crossover. signal=pv replaces dI = insns(baseline) - insns(signal=pv) kernel
// instructions per signal with dE = exits(signal=pv) - exits(baseline) exits. If the
// rest of a signal costs both builds the same, T(new) - T(old) = dE*e - dI*i, for e the
// cost of one exit round trip and i that of one kernel instruction: offloading wins
// when e < (dI/dE)*i, when an exit costs fewer than dI/dE kernel instructions (the
// break-even, exact from the counts). Where the costs come from:
//  - i, from this study's bench: the baseline's time per signal over its kernel
//    instructions. An upper bound (that time also pays the user's instructions, the
//    #DE's delivery, the phase markers), and a close one where guest CPL0 is emulated
//    and the kernel's instructions are nearly all of the time. A host that does not
//    emulate CPL0 counts no kernel instructions (kernel_insns is KVM's insn_emulation):
//    there is no i, no break-even, and the text says what the times alone show.
//  - e, from `sigvisor probe`'s own measurement on this host (StudyHostCosts: its
//    io_exit mechanism's round trip, an `out` from guest CPL0 that reaches the VMM, as
//    the two hypercalls are), which the study command runs before the benches. The
//    prediction: e/i kernel instructions per exit against the break-even dI/dE. With i
//    at its bound, e/i is at least the true figure, so "loses" is certain and "wins"
//    holds if kernel instructions are most of the baseline's time. Without the probe
//    (an analysis of a saved bench) the prediction is a threshold on e instead.
//  - The times are then read for what they say about e: e = (T(new) - T(old) + dI*i)/dE,
//    so at least (T(new) - T(old))/dE (i >= 0, dI >= 0) and at most that with i at its
//    bound: the measured crossover beside the predicted one. The measured winner is the
//    time ratio alone.
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/study/study_internal.h"

namespace sigvisor::study {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kPhase = "divzero";

// ---- The figures --------------------------------------------------------------------

// No seed says anything here: every figure's claim is empty (the text shows no verdict;
// the JSON's and the CSV's say "the seed does not say").
void AddFigures(StudyContext& ctx) {
  for (TrapMechanism trap : ctx.bench.matrix.traps) {
    AddTime(ctx, kPhase, trap, TimeStat::kMedian, "time per signal (median)", {});
    AddCount(ctx, kPhase, trap, "kernel_insns_per_op", "kernel instructions", Unit::kInstructions,
             Insns, {});
    // The two hypercalls exit even with nothing trapping.
    AddCount(ctx, kPhase, trap, "exits_per_op", "VM exits", Unit::kExits, Exits, {});
    AddKvmExits(ctx, kPhase, trap);
  }
  AddTextBytes(ctx, {});
}

// ---- The crossover --------------------------------------------------------------------

// One build's figures per signal under one trap mechanism; nullopt: not measured.
struct BuildFigures {
  std::optional<double> ns;         // median time; none where no run's time is measured
  std::optional<double> insns;      // kernel instructions; none where the host counts none
  std::optional<double> exits;      // the VMM's exits; none without a completed run
  std::optional<double> kvm_exits;  // KVM's own (median); none where KVM gives no statistics
};

BuildFigures Figures(const bench::Cell* cell) {
  BuildFigures f;
  if (cell == nullptr) return f;
  if (cell->ns.n > 0) f.ns = cell->ns.median;
  f.insns = cell->per_op.kernel_insns;
  f.exits = cell->per_op.exits;
  if (cell->kvm_exits.n > 0) f.kvm_exits = cell->kvm_exits.median;
  return f;
}

struct Crossover {
  TrapMechanism trap = TrapMechanism::kOff;
  BuildFigures old_build, new_build;
  std::optional<double> insns_saved;             // dI
  std::optional<double> exits_added;             // dE
  std::optional<double> break_even_insns;        // dI/dE: an exit must cost fewer
  std::optional<double> ns_per_insn_max;         // i's bound: T(old)/I(old)
  std::optional<double> break_even_exit_ns_max;  // dI/dE * i's bound
  std::optional<double> time_ratio;              // T(new)/T(old)
  const Comparison* time = nullptr;              // its p
  std::optional<size_t> winner;                  // 0 old, 1 new: a significant time
  // What the medians say one exit costs: at least, at most (nullopt: no such bound).
  std::optional<double> exit_ns_min, exit_ns_max;
  // The probe's exit round trip, and what it predicts: e/i (at least, with i at its
  // bound) and the winner (0 old, 1 new).
  std::optional<double> probe_exit_ns;
  std::optional<double> probe_exit_insns_min;
  std::optional<size_t> predicted_winner;
};

Crossover Compute(const StudyContext& ctx, TrapMechanism trap) {
  Crossover x;
  x.trap = trap;
  x.old_build = Figures(ctx.Get(kPhase, 0, trap));
  x.new_build = Figures(ctx.Get(kPhase, 1, trap));
  const BuildFigures &o = x.old_build, &n = x.new_build;
  if (o.exits && n.exits) x.exits_added = *n.exits - *o.exits;
  if (o.insns && n.insns) x.insns_saved = *o.insns - *n.insns;
  if (o.ns && o.insns && *o.insns > 0) x.ns_per_insn_max = *o.ns / *o.insns;
  const bool more_exits = x.exits_added && *x.exits_added > 0;
  if (more_exits && x.insns_saved && *x.insns_saved > 0) {
    x.break_even_insns = *x.insns_saved / *x.exits_added;
    if (x.ns_per_insn_max) x.break_even_exit_ns_max = *x.break_even_insns * *x.ns_per_insn_max;
  }
  if (o.ns && n.ns && *o.ns > 0) x.time_ratio = *n.ns / *o.ns;
  x.probe_exit_ns = ctx.costs.exit_round_trip_ns;
  if (x.probe_exit_ns && x.ns_per_insn_max && *x.ns_per_insn_max > 0) {
    x.probe_exit_insns_min = *x.probe_exit_ns / *x.ns_per_insn_max;
    if (x.break_even_insns)
      x.predicted_winner = *x.probe_exit_insns_min < *x.break_even_insns ? 1 : 0;
  }
  x.time = FindComparison(ctx, "ns_per_op_median", kPhase, trap);
  if (x.time && x.time->significant() == true) {
    x.winner = x.time->new_value < x.time->old_value ? 1 : 0;
  }
  // e = (dT + dI*i)/dE with 0 <= i <= its bound; dI >= 0 as counted, or as signal=pv's
  // design intends where nothing counts it.
  if (more_exits && o.ns && n.ns && (!x.insns_saved || *x.insns_saved >= 0)) {
    const double dt = *n.ns - *o.ns;
    if (dt > 0) x.exit_ns_min = dt / *x.exits_added;
    if (x.insns_saved && x.ns_per_insn_max) {
      const double most = (dt + *x.insns_saved * *x.ns_per_insn_max) / *x.exits_added;
      if (most > 0) x.exit_ns_max = most;
    }
  }
  return x;
}

std::string Plural(double n, std::string_view one) {
  return absl::StrFormat("%s %s%s", Num(n), one, n == 1 ? "" : "s");
}

// A cost: to the nanosecond below 10 us (a kernel instruction's ~1006 ns, not "1.0 us").
std::string Ns(double ns) {
  return ns < 1e4 ? absl::StrFormat("%.0f ns", ns) : bench::FormatNs(ns);
}

// "Measured: signal=pv takes 0.71x baseline's time per signal (p=0.011): offloading
// wins here."
std::string MeasuredLine(const StudyContext& ctx, const Crossover& x) {
  if (!x.time_ratio || x.time == nullptr) {
    return "Measured: no time per signal for both builds (see the warnings below): no winner.\n";
  }
  std::string out =
      absl::StrFormat("Measured: %s takes %.2fx %s's time per signal (%s): ", ctx.new_name(),
                      *x.time_ratio, ctx.old_name(), x.time->Evidence());
  if (!x.winner) {
    out += "no winner at this run-to-run noise.\n";
  } else {
    out += *x.winner == 1 ? "offloading wins here.\n" : "offloading loses here.\n";
  }
  return out;
}

std::string CrossoverText(const StudyContext& ctx, const Crossover& x) {
  std::string out;
  if (!x.exits_added) return "Crossover: no completed run of both builds.\n";
  if (*x.exits_added <= 0) {
    absl::StrAppendFormat(&out,
                          "Crossover: none: %s took no more exits per signal than %s (%s vs %s):\n"
                          "  it trades nothing for the kernel instructions it saves.\n",
                          ctx.new_name(), ctx.old_name(), Num(*x.exits_added + *x.old_build.exits),
                          Num(*x.old_build.exits));
    return out + MeasuredLine(ctx, x);
  }
  const std::string exits = Plural(*x.exits_added, "exit");
  if (!x.insns_saved) {
    // A host that counts no kernel instruction (hardware KVM): no break-even.
    absl::StrAppendFormat(
        &out,
        "Crossover: %s takes %s more per signal for the kernel instructions it\n"
        "  saves, which this host does not count (only a host that emulates guest CPL0 does;\n"
        "  `sigvisor trace --workload divzero --diff %s` counts them on any): no\n"
        "  break-even here, only what the times show.\n",
        ctx.new_name(), exits, ctx.new_name());
    if (x.probe_exit_ns) {
      absl::StrAppendFormat(
          &out,
          "  Predicted from `sigvisor probe`: an exit round trip costs %s here, so\n"
          "  %s adds %s per signal; it wins only where the kernel instructions\n"
          "  it saves cost more than that.\n",
          Ns(*x.probe_exit_ns), ctx.new_name(), Ns(*x.probe_exit_ns * *x.exits_added));
    }
    out += MeasuredLine(ctx, x);
    if (x.winner == 0 && x.exit_ns_min) {
      absl::StrAppendFormat(
          &out,
          "  Its %s cost %s more per signal than the kernel work they replace: one\n"
          "  exit round trip costs at least %s here (if %s runs no more kernel\n"
          "  instructions than %s, as its design intends).\n",
          exits, Ns(*x.new_build.ns - *x.old_build.ns), Ns(*x.exit_ns_min), ctx.new_name(),
          ctx.old_name());
    } else if (x.winner == 1) {
      absl::StrAppendFormat(&out,
                            "  The kernel work it saves costs more than its %s, by %s per\n"
                            "  signal; the times alone bound neither cost.\n",
                            exits, Ns(*x.old_build.ns - *x.new_build.ns));
    }
    return out;
  }
  if (!x.break_even_insns) {
    absl::StrAppendFormat(&out,
                          "Crossover: none: %s takes %s more per signal and saves no kernel\n"
                          "  instructions (%s -> %s): offloading cannot win here.\n",
                          ctx.new_name(), exits, Num(*x.old_build.insns), Num(*x.new_build.insns));
    return out + MeasuredLine(ctx, x);
  }
  absl::StrAppendFormat(&out,
                        "Crossover: %s replaces %s per signal with %s:\n"
                        "  it wins where one exit costs less than %s (the break-even).\n",
                        ctx.new_name(), Plural(*x.insns_saved, "kernel instruction"), exits,
                        Plural(*x.break_even_insns, "kernel instruction"));
  if (x.break_even_exit_ns_max) {
    absl::StrAppendFormat(
        &out,
        "  A kernel instruction costs at most %s here (%s's time per signal / its\n"
        "  kernel instructions): the break-even is an exit round trip of at most %s.\n",
        Ns(*x.ns_per_insn_max), ctx.old_name(), Ns(*x.break_even_exit_ns_max));
    if (x.probe_exit_insns_min && x.predicted_winner) {
      absl::StrAppendFormat(
          &out,
          "  Predicted from `sigvisor probe`: an exit round trip costs %s here, %s kernel\n"
          "  instructions' worth at least: offloading should %s (break-even %s).\n",
          Ns(*x.probe_exit_ns), Num(*x.probe_exit_insns_min),
          *x.predicted_winner == 1 ? "win, if kernel instructions are most of the baseline's time"
                                   : "lose",
          Num(*x.break_even_insns));
    } else {
      absl::StrAppendFormat(
          &out,
          "  Predicted: offloading loses where one exit costs more than that, and should\n"
          "  win below it (`sigvisor probe`'s io_exit round trip is that cost; this analysis\n"
          "  was not given it).\n");
    }
  }
  out += MeasuredLine(ctx, x);
  if (x.exit_ns_max && x.ns_per_insn_max) {
    absl::StrAppendFormat(&out,
                          "  The medians put one exit round trip at %s%s here, at most %s\n"
                          "  kernel instructions' worth (the break-even: %s).\n",
                          x.exit_ns_min ? Ns(*x.exit_ns_min) + " to " : "no more than ",
                          Ns(*x.exit_ns_max), Num(*x.exit_ns_max / *x.ns_per_insn_max),
                          Num(*x.break_even_insns));
  } else if (x.time_ratio && x.ns_per_insn_max) {
    out +=
        "  The medians fit no positive cost of an exit (the rest of a signal did not cost\n"
        "  both builds the same, or the noise is larger than the difference).\n";
  }
  return out;
}

json OptionalJson(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json BuildJson(const std::string& name, const BuildFigures& f) {
  return {{"variant", name},
          {"ns_per_op", OptionalJson(f.ns)},
          {"kernel_insns_per_op", OptionalJson(f.insns)},
          {"exits_per_op", OptionalJson(f.exits)},
          {"kvm_exits_per_op", OptionalJson(f.kvm_exits)}};
}

json CrossoverJson(const StudyContext& ctx, const Crossover& x) {
  return {{"trap", TrapMechanismName(x.trap)},
          {"old", BuildJson(ctx.old_name(), x.old_build)},
          {"new", BuildJson(ctx.new_name(), x.new_build)},
          {"kernel_insns_saved", OptionalJson(x.insns_saved)},
          {"exits_added", OptionalJson(x.exits_added)},
          {"break_even_insns_per_exit", OptionalJson(x.break_even_insns)},
          {"ns_per_kernel_insn_max", OptionalJson(x.ns_per_insn_max)},
          {"break_even_exit_ns_max", OptionalJson(x.break_even_exit_ns_max)},
          {"time_ratio", OptionalJson(x.time_ratio)},
          {"p_value", x.time ? OptionalJson(x.time->p_value) : json(nullptr)},
          {"measured_winner",
           x.winner ? json(ctx.bench.matrix.variants[*x.winner].name) : json(nullptr)},
          {"exit_ns_min", OptionalJson(x.exit_ns_min)},
          {"exit_ns_max", OptionalJson(x.exit_ns_max)},
          {"probe_exit_round_trip_ns", OptionalJson(x.probe_exit_ns)},
          {"probe_exit_insns_min", OptionalJson(x.probe_exit_insns_min)},
          {"predicted_winner", x.predicted_winner
                                   ? json(ctx.bench.matrix.variants[*x.predicted_winner].name)
                                   : json(nullptr)}};
}

// ---- The study's table: each build per signal, then the crossover ---------------------

std::string StudyTable(StudyContext& ctx) {
  std::string out;
  json crossovers = json::array();
  for (TrapMechanism trap : ctx.bench.matrix.traps) {
    const Crossover x = Compute(ctx, trap);
    absl::StrAppendFormat(&out, "\n%s against %s on divzero (%d divide by zeros per run), %s:\n",
                          ctx.new_name(), ctx.old_name(), ctx.bench.matrix.ops,
                          TrapNote(trap, ctx.bench.host));
    absl::StrAppendFormat(&out, "  %-14s %14s %26s %9s %12s\n", "per signal", "time (median)",
                          "kernel instructions", "VM exits", "KVM's exits");
    for (size_t which = 0; which < 2; ++which) {
      const BuildFigures& f = which == 0 ? x.old_build : x.new_build;
      const std::string& name = ctx.bench.matrix.variants[which].name;
      if (!f.exits) {
        absl::StrAppendFormat(&out, "  %-14s (no completed run)\n", name);
        continue;
      }
      absl::StrAppendFormat(&out, "  %-14s %14s %26s %9s %12s\n", name,
                            f.ns ? bench::FormatNs(*f.ns) : "not measured",
                            f.insns ? Num(*f.insns) : "not counted on this host", Num(*f.exits),
                            f.kvm_exits ? Num(*f.kvm_exits) : "-");
    }
    out += CrossoverText(ctx, x);
    crossovers.push_back(CrossoverJson(ctx, x));
  }
  ctx.extra["crossover"] = std::move(crossovers);
  return out;
}

void Analyze(StudyContext& ctx) {
  AddFigures(ctx);
  ctx.text += StudyTable(ctx);
  ctx.text += ComparisonTable(ctx, "signal");
}

}  // namespace

// Ops and runs as dr7's, on the same workload: a divzero signal costs ~0.8 ms on this
// project's PVM hosts.
StudyDef PvsigStudy() {
  return {.name = "pvsig",
          .seed = "",
          .title = "signal frames written and read back by the VMM (signal=pv)",
          .workload = "divzero",
          .old_variant = "baseline",
          .new_variant = "signal=pv",
          .default_ops = 300,
          .default_repetitions = 20,
          .default_traps = {TrapMechanism::kOff},
          .analyze = Analyze,
          .uses_host_costs = true};
}

}  // namespace sigvisor::study
