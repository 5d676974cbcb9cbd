#include "arch/mips/vmm/marker_netting.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "arch/mips/vmm/cost_model.h"

namespace sigvisor::mips {

std::optional<std::string> NetMarkerUserCode(const OperationMarks& marks, PhaseResult& phase) {
  const std::string inexact = absl::StrFormat(
      "phase '%s': its counts include the markers' own user code, so its per-op counts are "
      "not exact: ",
      phase.name);
  if (!marks.op_syscall) return inexact + "the guest named no per-op system call";
  if (phase.ops < 2) {
    return inexact + absl::StrFormat("%d op%s, and it takes two to measure one", phase.ops,
                                     phase.ops == 1 ? "" : "s");
  }
  if (!marks.calibration_user || !phase.marker_overhead) {
    return inexact + "no calibration phase came before it";
  }
  if (marks.entries != phase.ops) {
    return inexact + absl::StrFormat("%d entries into system call %d for %d ops", marks.entries,
                                     *marks.op_syscall, phase.ops);
  }
  if (!marks.one_core) return inexact + "its task moved between cores";
  const uint64_t spans = phase.ops - 1;
  const uint64_t between = marks.last - marks.first;
  if (marks.last < marks.first || between % spans != 0) {
    return inexact + absl::StrFormat(
                         "its operations' user code is not the same each time (%d instructions "
                         "over the %d operations between the first and the last entry into "
                         "system call %d)",
                         between, spans, *marks.op_syscall);
  }
  const uint64_t operations = between / spans * phase.ops + *marks.calibration_user;
  if (marks.phase_user < operations) {
    return inexact + absl::StrFormat(
                         "its task ran %d user instructions, fewer than its operations' and the "
                         "calibration's %d",
                         marks.phase_user, operations);
  }
  const uint64_t markers = marks.phase_user - operations;
  const std::string core = marks.cores > 1 ? absl::StrCat("core", marks.core, ".") : "";
  std::vector<std::string> where = {""};
  if (!core.empty()) where.push_back(core);
  for (const std::string& prefix : where) {
    for (const auto& [name, cost] :
         {std::pair<std::string, uint64_t>{"instructions", markers},
          {"modelled_cycles", markers * CostModel::kCyclesPerInstruction}}) {
      auto it = phase.kvm_stats.find(prefix + name);
      if (it == phase.kvm_stats.end()) continue;
      it->second = SaturatingSubtract(it->second, cost);
      phase.marker_overhead->kvm_stats[prefix + name] += cost;
    }
  }
  return std::nullopt;
}

}  // namespace sigvisor::mips
