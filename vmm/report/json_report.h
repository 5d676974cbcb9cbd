// `sigvisor run --json`: one JSON document per run. The schema is documented in
// docs/json.md; field names are stable and carry their units.
#ifndef SIGVISOR_VMM_REPORT_JSON_REPORT_H_
#define SIGVISOR_VMM_REPORT_JSON_REPORT_H_

#include <nlohmann/json.hpp>

#include "vmm/report/run_record.h"

namespace sigvisor {

// 2: phases' traps.by_site in the run's row shape, traps.reason null when off,
// interpreter_stats for the MIPS interpreter (kvm_stats null), kvm_stats_left_out,
// boot_ns null without a hypercall, the "sigvisor" member (docs/schema/).
inline constexpr const char* kRunSchema = "sigvisor.run/2";

// Keys keep the order documented in docs/json.md (ordered_json).
nlohmann::ordered_json RunRecordToJson(const RunRecord& record);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_REPORT_JSON_REPORT_H_
