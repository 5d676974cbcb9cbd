// `sigvisor study ipi` (no seed): what a signal to another CPU costs by each way of
// sending the IPI (docs/smp.md), on KVM's local APICs and on the VMM's, beside a signal
// on one vCPU. The bench runs xcpu_pingpong on the smp=on build on two vCPUs with --ipi
// x2apic, xapic and pv, each with --lapic kvm (the APIC's work stays in KVM) and --lapic
// vmm (every APIC access an IPI needs is an exit, counted); a second bench (the
// reference, StudyDef::reference_workload) runs sigpingpong, the same round trip
// between two processes on one CPU, on the same smp=on build on one vCPU: so the ratio
// prices crossing CPUs, not the SMP build's lock. Per cross-CPU signal (an op is two,
// one each way): each vCPU's exits that reached the VMM, the IPIs sent to it by the
// kernel's own count (exact; else the interrupts KVM injected into it, irq_injections,
// which re-injections can exceed), the time, and the time over the one-vCPU signal's.
// No verdict: there is no seed to agree with.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/app/study/study_internal.h"

namespace sigvisor::study {
namespace {

using json = nlohmann::ordered_json;

// An op of each workload is a round trip: two signals.
constexpr double kSignalsPerOp = 2;

// A time per signal: median, min and max over the runs; none when no run measured one.
struct SignalTime {
  double median = 0, min = 0, max = 0;
};

std::optional<SignalTime> TimeOf(const bench::Cell* cell) {
  if (cell == nullptr || cell->ns.n == 0) return std::nullopt;
  return SignalTime{cell->ns.median / kSignalsPerOp, cell->ns.min / kSignalsPerOp,
                    cell->ns.max / kSignalsPerOp};
}

json TimeJson(const std::optional<SignalTime>& t) {
  if (!t) return nullptr;
  return {{"median", t->median}, {"min", t->min}, {"max", t->max}};
}

std::string TimeText(const std::optional<SignalTime>& t) {
  if (!t) return "not measured";
  return absl::StrFormat("%s [%s - %s]", bench::FormatNs(t->median), bench::FormatNs(t->min),
                         bench::FormatNs(t->max));
}

// Whose local APICs a way's vCPUs have: "kvm" (the in-kernel irqchip, run's default) or
// "vmm".
std::string LapicOf(const bench::VariantInfo& variant) {
  return variant.lapic.empty() ? "kvm" : variant.lapic;
}

// The reference's cell (the one-vCPU signal) under `trap`, or null.
const bench::Cell* ReferenceCell(const StudyContext& ctx, const std::vector<bench::Cell>& cells,
                                 TrapMechanism trap) {
  if (ctx.reference == nullptr || ctx.reference->matrix.variants.empty()) return nullptr;
  const bench::Cell* cell =
      bench::FindCell(cells, *ctx.reference, ctx.def.reference_workload, ctx.def.reference_workload,
                      ctx.reference->matrix.variants[0].name, trap);
  return cell != nullptr && !cell->samples.empty() ? cell : nullptr;
}

void Analyze(StudyContext& ctx) {
  const bench::Matrix& m = ctx.bench.matrix;
  // The builds are one image on different machines: one text size.
  ctx.extra["text_bytes"] = {{"old", TextBytes(ctx, 0)},
                             {"new", TextBytes(ctx, m.variants.size() > 1 ? 1 : 0)}};
  const std::vector<bench::Cell> reference_cells =
      ctx.reference != nullptr ? bench::Cells(*ctx.reference) : std::vector<bench::Cell>();
  size_t vcpus = 1;
  for (const bench::VariantInfo& v : m.variants) vcpus = std::max(vcpus, size_t(v.vcpus));
  json per_trap = json::array();
  for (size_t t = 0; t < m.traps.size(); ++t) {
    const TrapMechanism trap = m.traps[t];
    const bench::Cell* ref = ReferenceCell(ctx, reference_cells, trap);
    const std::optional<SignalTime> ref_time = TimeOf(ref);
    absl::StrAppendFormat(
        &ctx.text,
        "\n%s: a signal each way per op between CPU 0 and CPU 1; per cross-CPU signal (half "
        "an op), %s:\n",
        ctx.def.workload, TrapNote(trap, ctx.bench.host));
    std::string head = absl::StrFormat("  %-36s", "build");
    for (size_t i = 0; i < vcpus; ++i)
      head += absl::StrFormat(" %8s", absl::StrFormat("exits %d", i));
    for (size_t i = 0; i < vcpus; ++i)
      head += absl::StrFormat(" %7s", absl::StrFormat("IPIs %d", i));
    head += absl::StrFormat("  %-32s %s\n", "time (median) [min - max]", "x one-vCPU signal");
    ctx.text += head;
    json ways = json::array();
    for (size_t v = 0; v < m.variants.size(); ++v) {
      const bench::VariantInfo& variant = m.variants[v];
      const bench::Cell* cell = ctx.Get(ctx.def.workload, v, trap);
      if (cell == nullptr) {
        absl::StrAppendFormat(&ctx.text, "  %-36s (no completed run)\n", variant.name);
        ways.push_back({{"variant", variant.name},
                        {"ipi", variant.ipi},
                        {"lapic", LapicOf(variant)},
                        {"vcpus", json::array()},
                        {"ns_per_signal", nullptr},
                        {"ratio_to_one_vcpu", nullptr}});
        continue;
      }
      const std::optional<SignalTime> time = TimeOf(cell);
      const std::optional<double> ratio =
          time && ref_time && ref_time->median > 0
              ? std::optional<double>(time->median / ref_time->median)
              : std::nullopt;
      std::string row = absl::StrFormat("  %-36s", variant.name);
      std::string ipis;
      json per_vcpu = json::array();
      for (size_t i = 0; i < vcpus; ++i) {
        auto it = std::find_if(cell->vcpus.begin(), cell->vcpus.end(),
                               [i](const bench::VcpuPerOp& x) { return x.vcpu == int(i); });
        if (it == cell->vcpus.end()) {
          row += absl::StrFormat(" %8s", "-");
          ipis += absl::StrFormat(" %7s", "-");
          continue;
        }
        const double exits = it->exits / kSignalsPerOp;
        auto per_signal = [](const std::optional<double>& per_op) {
          return per_op ? std::optional<double>(*per_op / kSignalsPerOp) : std::nullopt;
        };
        const std::optional<double> interrupts = per_signal(it->interrupts);
        // The kernel's own count is exact; KVM's injections only where it keeps none.
        const std::optional<double> received = it->ipis ? per_signal(it->ipis) : interrupts;
        row += absl::StrFormat(" %8s", Num(exits));
        ipis += absl::StrFormat(" %7s", received ? Num(*received) : "-");
        per_vcpu.push_back({{"vcpu", it->vcpu},
                            {"exits", exits},
                            {"ipis", received ? json(*received) : json(nullptr)},
                            {"interrupts", interrupts ? json(*interrupts) : json(nullptr)}});
      }
      absl::StrAppendFormat(&ctx.text, "%s%s  %-32s %s\n", row, ipis, TimeText(time),
                            ratio ? absl::StrFormat("%.3f", *ratio) : "-");
      ways.push_back({{"variant", variant.name},
                      {"ipi", variant.ipi},
                      {"lapic", LapicOf(variant)},
                      {"vcpus", std::move(per_vcpu)},
                      {"ns_per_signal", TimeJson(time)},
                      {"ratio_to_one_vcpu", ratio ? json(*ratio) : json(nullptr)}});
    }
    const std::string ref_name = ctx.reference != nullptr && !ctx.reference->matrix.variants.empty()
                                     ? absl::StrFormat("%s on %s", ctx.def.reference_workload,
                                                       ctx.reference->matrix.variants[0].name)
                                     : std::string(ctx.def.reference_workload);
    absl::StrAppendFormat(&ctx.text, "  one-vCPU signal (%s): %s per signal\n", ref_name,
                          ref == nullptr ? "no completed run" : TimeText(ref_time));
    per_trap.push_back(
        {{"trap", TrapMechanismName(trap)},
         {"ways", std::move(ways)},
         {"one_vcpu",
          {{"workload", ctx.def.reference_workload},
           {"variant", ctx.reference != nullptr && !ctx.reference->matrix.variants.empty()
                           ? json(ctx.reference->matrix.variants[0].name)
                           : json(nullptr)},
           {"ns_per_signal", TimeJson(ref_time)}}}});
  }
  ctx.text +=
      "exits N: vCPU N's exits that reached the VMM (pv: its send_ipi hypercalls; @lapic=vmm: "
      "also its APIC accesses, exact, and its halts and kicks, which follow the host's timing); "
      "IPIs N: the IPIs sent to vCPU N by the kernel's own count (KVM's irq_injections where the "
      "kernel does not count), each per signal\n";
  ctx.extra["ipi"] = std::move(per_trap);
}

}  // namespace

// Ops and runs as dequeue's, whose sigpingpong is the reference: a round trip costs
// about 2 ms on this project's PVM hosts.
StudyDef IpiStudy() {
  return {.name = "ipi",
          .seed = "",
          .title =
              "a signal to another CPU by each way of sending the IPI, on KVM's local "
              "APICs and on the VMM's",
          .workload = "xcpu_pingpong",
          .old_variant = "",
          .new_variant = "",
          .default_ops = 100,
          .default_repetitions = 10,
          .default_traps = {TrapMechanism::kOff},
          .analyze = Analyze,
          .variants = {"smp=on@vcpus=2@ipi=x2apic", "smp=on@vcpus=2@ipi=xapic",
                       "smp=on@vcpus=2@ipi=pv", "smp=on@vcpus=2@ipi=x2apic@lapic=vmm",
                       "smp=on@vcpus=2@ipi=xapic@lapic=vmm", "smp=on@vcpus=2@ipi=pv@lapic=vmm"},
          .reference_workload = "sigpingpong",
          .reference_variant = "smp=on"};
}

}  // namespace sigvisor::study
