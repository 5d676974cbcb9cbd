#include "vmm/report/phase_spread.h"

#include <algorithm>
#include <map>

namespace sigvisor {

std::optional<SampleSpread> SpreadOf(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return SampleSpread{values.front(), median, values.back(), n};
}

std::vector<PhaseSpread> SpreadOfRepeatedPhases(const std::vector<PhaseResult>& phases,
                                                bool cpl0_emulated) {
  // Names in the order of their first phase, and each name's phases.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const PhaseResult*>> by_name;
  for (const PhaseResult& phase : phases) {
    auto& samples = by_name[phase.name];
    if (samples.empty()) order.push_back(phase.name);
    samples.push_back(&phase);
  }
  std::vector<PhaseSpread> spreads;
  for (const std::string& name : order) {
    const std::vector<const PhaseResult*>& samples = by_name[name];
    if (samples.size() < 2) continue;
    PhaseSpread spread{.name = name, .samples = samples.size()};
    std::vector<double> exits, insns, tsc, ns;
    for (const PhaseResult* phase : samples) {
      spread.ops += phase->ops;
      if (phase->ops == 0) continue;
      const double ops = static_cast<double>(phase->ops);
      exits.push_back(static_cast<double>(phase->exits_total) / ops);
      if (auto it = phase->kvm_stats.find("insn_emulation");
          cpl0_emulated && it != phase->kvm_stats.end()) {
        insns.push_back(static_cast<double>(it->second) / ops);
      }
      if (phase->time_measured()) {
        tsc.push_back(static_cast<double>(phase->tsc_cycles) / ops);
        ns.push_back(static_cast<double>(phase->wall_ns) / ops);
      }
    }
    spread.exits = SpreadOf(std::move(exits));
    spread.kernel_insns = SpreadOf(std::move(insns));
    spread.tsc_cycles = SpreadOf(std::move(tsc));
    spread.ns = SpreadOf(std::move(ns));
    spreads.push_back(std::move(spread));
  }
  return spreads;
}

}  // namespace sigvisor
