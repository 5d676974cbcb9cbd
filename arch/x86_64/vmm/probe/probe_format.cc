#include "arch/x86_64/vmm/probe/probe_format.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace sigvisor {
namespace {

std::string YesNo(bool value) { return value ? "yes" : "no"; }

// Microseconds with two decimals, or "-" when unknown.
std::string Micros(double ns) {
  return std::isnan(ns) ? "-" : absl::StrFormat("%.2f", ns / 1000.0);
}

nlohmann::ordered_json NumberOrNull(double value) {
  return std::isnan(value) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(value);
}

}  // namespace

std::string FormatProbeTable(const ProbeReport& report) {
  std::string out = absl::StrFormat("KVM probe (%d iterations per loop, median of %d runs)\n",
                                    report.iterations, report.repeats);
  auto fact = [&out](const std::string& name, const std::string& value) {
    absl::StrAppendFormat(&out, "  %-30s %s\n", name, value);
  };
  fact("host kind", report.host_kind);
  fact("guest CPL0 emulated", YesNo(report.cpl0_emulated));
  fact("insn_emulation per CPL0 insn",
       std::isnan(report.insn_emulation_per_cpl0_insn)
           ? "-"
           : absl::StrFormat("%.3f", report.insn_emulation_per_cpl0_insn));
  fact("SYSCALL from CPL3 enters CPL0", YesNo(report.syscall_enters_cpl0));
  fact("INT n from CPL3 delivered",
       report.int_n_from_cpl3
           ? "yes"
           : absl::StrFormat("no (vector %d instead)", report.int_n_from_cpl3_vector));
  fact("VM create", std::isnan(report.vm_create_ns)
                        ? "-"
                        : absl::StrFormat("%.2f ms", report.vm_create_ns / 1e6));
  out += "  how: " + report.host_note + "\n";
  for (const std::string& note : report.notes) out += "  " + note + "\n";

  absl::StrAppendFormat(&out, "\n  %-22s %-6s %16s  %s\n", "mechanism", "works",
                        "round trip (us)", "note");
  for (const MechanismResult& m : report.mechanisms) {
    absl::StrAppendFormat(&out, "  %-22s %-6s %16s  %s\n", m.name, YesNo(m.works),
                          Micros(m.round_trip_ns), m.note);
  }
  return out;
}

nlohmann::ordered_json ProbeReportToJson(const ProbeReport& report) {
  using Json = nlohmann::ordered_json;
  // ordered_json keeps insertion order: the facts in the table's row order (the
  // order docs/json.md documents), so the JSON and the table read side by side.
  Json json = {
      {"schema", kProbeSchema},
      {"host_kind", report.host_kind},
      {"cpl0_emulated", report.cpl0_emulated},
      {"insn_emulation_per_cpl0_insn", NumberOrNull(report.insn_emulation_per_cpl0_insn)},
      {"syscall_enters_cpl0", report.syscall_enters_cpl0},
      {"int_n_from_cpl3", report.int_n_from_cpl3},
      {"int_n_from_cpl3_vector", report.int_n_from_cpl3_vector},
      {"vm_create_ns", NumberOrNull(report.vm_create_ns)},
  };
  Json mechanisms = Json::array();
  for (const MechanismResult& m : report.mechanisms) {
    mechanisms.push_back({
        {"name", m.name},
        {"works", m.works},
        {"round_trip_ns", NumberOrNull(m.round_trip_ns)},
        {"note", m.note},
    });
  }
  json["mechanisms"] = std::move(mechanisms);
  // How the round trips were measured (the table's title line).
  json["iterations"] = report.iterations;
  json["repeats"] = report.repeats;
  // The prose last: how host_kind was decided, then the SYSCALL and INT n details.
  json["host_note"] = report.host_note;
  json["notes"] = report.notes;
  return json;
}

}  // namespace sigvisor
