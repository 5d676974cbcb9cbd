// Presenting a ProbeReport: a table for people, JSON for tools.
#ifndef SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_FORMAT_H_
#define SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_FORMAT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "arch/x86_64/vmm/probe/probe.h"

namespace sigvisor {

// The facts, then one row per mechanism: works?, round trip in microseconds, note.
std::string FormatProbeTable(const ProbeReport& report);

inline constexpr const char* kProbeSchema = "sigvisor.probe/1";

// `sigvisor probe --json` (documented in docs/json.md). Stable snake_case names with
// units in the names (round_trip_ns, vm_create_ns); a number that is unknown (NaN)
// is null. Keys keep their order (ordered_json): "schema", the facts in the table's
// order, the mechanisms, iterations and repeats, then the notes.
nlohmann::ordered_json ProbeReportToJson(const ProbeReport& report);

}  // namespace sigvisor

#endif  // SIGVISOR_ARCH_X86_64_VMM_PROBE_PROBE_FORMAT_H_
