#include "vmm/trace/format.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "vmm/trace/stages.h"

namespace sigvisor::trace {
namespace {

using Json = nlohmann::ordered_json;

std::string Hex(uint64_t v) { return absl::StrFormat("%#x", v); }

std::string Bytes(const std::vector<uint8_t>& bytes) {
  std::vector<std::string> hex;
  for (uint8_t b : bytes) hex.push_back(absl::StrFormat("%02x", b));
  return absl::StrJoin(hex, " ");
}

// "0x40001234 main+0x14", or just the address when no symbol names it.
std::string Where(uint64_t address, const std::string& symbol) {
  return symbol.empty() || symbol == Hex(address) ? Hex(address)
                                                  : absl::StrCat(Hex(address), " ", symbol);
}

std::string OpaqueLine(const Entry& e) {
  std::string line = absl::StrFormat("  [CPL%d %s .. %s, left by %s: not single-stepped", e.cpl,
                                     Where(e.address, e.symbol),
                                     Where(e.exit_address, e.exit_symbol), e.exit_via);
  if (e.host_emulated) {
    absl::StrAppendFormat(&line, "; the host's emulator ran %d instruction%s of it",
                          *e.host_emulated, *e.host_emulated == 1 ? "" : "s");
    if (e.host_emulation_failures && *e.host_emulation_failures > 0) {
      absl::StrAppendFormat(&line, " (emulation failures %d)", *e.host_emulation_failures);
    }
  }
  return line + "]\n";
}

std::string InsnLine(const Entry& e) {
  std::vector<std::string> notes = e.notes;
  if (e.passes > 1) notes.insert(notes.begin(), absl::StrFormat("%d passes", e.passes));
  if (e.cpl != 0) notes.insert(notes.begin(), absl::StrFormat("CPL%d", e.cpl));
  std::string line = absl::StrFormat("  %-10s %-30s %-23s %-34s", Hex(e.address), e.symbol,
                                     Bytes(e.bytes), e.text);
  if (!notes.empty()) absl::StrAppend(&line, " ; ", absl::StrJoin(notes, "; "));
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

// An op's entry range [first, second), clipped to the trace: the formatters take the
// analysis and the trace separately, and must not index past the entries whatever
// they are handed.
std::pair<size_t, size_t> EntriesOf(const Trace& trace, const OpSlice& op) {
  const size_t end = std::min(op.end, trace.entries.size());
  return {std::min(op.begin, end), end};
}

// Which op (0-based) each entry belongs to; nullopt for the markers' part.
std::vector<std::optional<size_t>> OpOf(const Trace& trace, const Analysis& a) {
  std::vector<std::optional<size_t>> op(trace.entries.size());
  for (size_t k = 0; k < a.ops.size(); ++k) {
    const auto [begin, end] = EntriesOf(trace, a.ops[k]);
    for (size_t i = begin; i < end; ++i) op[i] = k;
  }
  return op;
}

// `to - from` with its sign ("+3", "-2", "+0"): exact for any two counts, where a
// difference of int64_t casts could overflow.
std::string Delta(uint64_t from, uint64_t to) {
  return to >= from ? absl::StrCat("+", to - from) : absl::StrCat("-", from - to);
}

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF), or 0 when there is none.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t second_min = 0x80, second_max = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) second_min = 0xa0;  // overlong below it
    if (lead == 0xed) second_max = 0x9f;  // surrogates above it
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) second_min = 0x90;  // overlong below it
    if (lead == 0xf4) second_max = 0x8f;  // past U+10FFFF above it
  } else {
    return 0;
  }
  if (s.size() - i < length) return 0;
  if (byte(i + 1) < second_min || byte(i + 1) > second_max) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return length;
}

// Makes every string in `j` UTF-8, each byte outside a well-formed sequence replaced
// by U+FFFD: nlohmann's
// dump() throws on anything else, and a trace's names and text come from the guest
// image's symbol table and the disassembler, whatever bytes those hold.
void ReplaceNonUtf8(Json& j) {
  if (j.is_structured()) {
    for (Json& element : j) ReplaceNonUtf8(element);
    return;
  }
  if (!j.is_string()) return;
  const std::string& s = j.get_ref<const std::string&>();
  std::string fixed;
  size_t copied = 0;  // s[0, copied) is in `fixed` or needs no fixing
  for (size_t i = 0; i < s.size();) {
    const size_t length = Utf8SequenceLength(s, i);
    if (length > 0) {
      i += length;
      continue;
    }
    fixed.append(s, copied, i - copied);
    fixed += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER
    copied = ++i;
  }
  if (copied == 0) return;  // all of it was UTF-8
  fixed.append(s, copied, std::string::npos);
  j = std::move(fixed);
}

std::string CountLine(const Analysis& a, uint64_t value, std::optional<uint64_t> ledger) {
  if (!ledger) return absl::StrFormat("%d", value);
  return absl::StrFormat("%d (ledger %d%s)", value, *ledger, value == *ledger ? "" : ": differs");
}

// `text` with each address (a hex literal of 4 digits or more: past the first page)
// replaced by ADDR. A scan, not std::regex, whose matcher recurses once per character
// and overflows the stack on a long enough operand.
std::string WithoutAddresses(std::string_view text) {
  auto is_hex_digit = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i).starts_with("0x")) {
      size_t digits_end = i + 2;
      while (digits_end < text.size() && is_hex_digit(text[digits_end])) ++digits_end;
      if (digits_end - (i + 2) >= 4) {
        out += "ADDR";
        i = digits_end;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

// Normalises an instruction for alignment: its function path and its text with
// addresses replaced.
std::string AlignKey(const Entry& e) {
  if (e.kind == Entry::Kind::kOpaque) return "(opaque) " + e.exit_via;
  const std::vector<std::string> frames = Frames(e);
  return frames.back() + " " + WithoutAddresses(e.text);
}

Json EntryJson(const Entry& e, std::optional<size_t> op, const std::string& stage) {
  Json j;
  if (e.kind == Entry::Kind::kOpaque) {
    j["kind"] = "opaque";
    j["cpl"] = e.cpl;
    j["entry"] = Hex(e.address);
    j["entry_symbol"] = e.symbol;
    j["exit"] = Hex(e.exit_address);
    j["exit_symbol"] = e.exit_symbol;
    j["exit_via"] = e.exit_via;
    j["host_emulated"] = e.host_emulated ? Json(*e.host_emulated) : Json(nullptr);
    j["host_emulation_failures"] =
        e.host_emulation_failures ? Json(*e.host_emulation_failures) : Json(nullptr);
  } else {
    j["kind"] = "insn";
    j["cpl"] = e.cpl;
    j["address"] = Hex(e.address);
    j["symbol"] = e.symbol;
    j["function"] = e.function;
    j["inlined"] = e.inlined;
    j["callers"] = e.callers;
    j["bytes"] = Bytes(e.bytes);
    j["text"] = e.text;
    j["passes"] = e.passes;
    j["unstepped"] = e.unstepped;
    j["debug_register_write"] = e.debug_register_write;
    j["debug_control_write"] = e.debug_control_write;
  }
  j["kernel_insns"] = HostCount(e);
  j["op"] = op ? Json(*op) : Json(nullptr);
  j["stage"] = stage.empty() ? Json(nullptr) : Json(stage);
  j["notes"] = e.notes;
  return j;
}

}  // namespace

std::string FormatListing(const Trace& trace, const Analysis& a) {
  std::string out;
  const std::vector<std::optional<size_t>> op = OpOf(trace, a);
  std::optional<size_t> current_op;
  std::string current_path;
  for (size_t i = 0; i < trace.entries.size(); ++i) {
    const Entry& e = trace.entries[i];
    if (i == 0 || op[i] != current_op) {
      if (op[i]) {
        absl::StrAppendFormat(&out, "== op %d: %d kernel instructions ==\n", *op[i] + 1,
                              a.ops[*op[i]].kernel_insns);
      } else if (a.ops.empty()) {
        absl::StrAppendFormat(&out, "== the phase, not cut into ops (%s) ==\n", a.ops_note);
      } else if (i == 0) {
        out += "== the BEGIN marker's system call returning (marker overhead) ==\n";
      } else {
        out += "== to the END marker (marker overhead) ==\n";
      }
      current_op = op[i];
      current_path.clear();
    }
    if (e.kind == Entry::Kind::kOpaque) {
      out += OpaqueLine(e);
      current_path.clear();
      continue;
    }
    const std::string path = absl::StrJoin(Frames(e), " > ");
    if (path != current_path) {
      absl::StrAppend(&out, "  -- ", path, "\n");
      current_path = path;
    }
    out += InsnLine(e);
  }
  return out;
}

std::string NoLedgerCheckReason(const Trace& trace) {
  if (trace.run_outcome == "timeout") {
    // Single-stepping costs an exit per instruction: a phase that runs in a moment
    // runs for minutes traced.
    return absl::StrFormat(
        "the run timed out%s before the phase ended: single-stepping is slow; raise --timeout",
        trace.run_timeout.empty() ? "" : absl::StrCat(" at --timeout ", trace.run_timeout));
  }
  if (trace.ledger_kernel_insns) {
    return absl::StrFormat("the ledger counted %d, but the ops could not be cut apart",
                           *trace.ledger_kernel_insns);
  }
  if (trace.host_kind != "pvm") return "this host does not count kernel instructions";
  if (!trace.run_outcome.empty() && trace.run_outcome != "exited") {
    return absl::StrFormat("the run ended (%s) before the phase did", trace.run_outcome);
  }
  return "the run's ledger has no count for the phase";
}

std::string FormatSummary(const TraceSource& source, const Trace& trace, const Analysis& a) {
  std::string out;
  absl::StrAppendFormat(&out, "sigvisor trace: %s, %s\n", source.image, source.cmdline);
  absl::StrAppendFormat(&out, "  phase %s, %d op%s; host %s, trap mechanism %s\n", trace.phase,
                        trace.ops, trace.ops == 1 ? "" : "s", trace.host_kind,
                        TrapMechanismName(trace.trap));
  if (!trace.complete) {
    absl::StrAppendFormat(&out, "  the trace is incomplete: %s\n", trace.stopped_why);
  }
  absl::StrAppendFormat(
      &out,
      "  traced %d kernel instructions as KVM counts them (%d executed, %d single steps)\n",
      a.phase_kernel_insns, a.phase_distinct, trace.vmm_steps);
  absl::StrAppendFormat(&out, "  markers (BEGIN returning, END entering): %s\n",
                        CountLine(a, a.marker_kernel_insns, a.ledger_marker));
  if (a.ops.empty()) {
    absl::StrAppendFormat(&out, "  ops: not separable (%s)\n", a.ops_note);
  } else {
    for (size_t k = 0; k < a.ops.size(); ++k) {
      if (k == 3 && a.ops.size() > 4 && a.ops_uniform) {
        absl::StrAppendFormat(&out, "  ... %d more ops, the same\n", a.ops.size() - 3);
        break;
      }
      absl::StrAppendFormat(&out, "  op %d: %s kernel instructions\n", k + 1,
                            CountLine(a, a.ops[k].kernel_insns, a.ledger_per_op));
    }
  }
  if (a.matches_ledger) {
    out += *a.matches_ledger
               ? "  the trace matches the ledger (insn_emulation, net of the markers) exactly\n"
               : "  the trace does NOT match the ledger\n";
  } else {
    absl::StrAppend(&out, "  no ledger count to check against (", NoLedgerCheckReason(trace),
                    ")\n");
  }
  if (trace.host_kind == "pvm") {
    out += "  counting: KVM counts a rep string instruction twice (two passes of its emulator)";
    if (!trace.opaque_reason.empty()) out += " and each user int $0x80 it decodes";
    out += "\n";
  } else {
    out += "  counting: as an emulating host's KVM would (a rep string instruction that moves "
           "anything twice), so that both host kinds compare\n";
  }
  if (!trace.opaque_reason.empty()) absl::StrAppend(&out, "  opaque: ", trace.opaque_reason, "\n");

  absl::StrAppendFormat(&out, "\nprofile of %s (kernel instructions)\n",
                        a.ops.empty() ? "the phase" : "op 1");
  absl::StrAppendFormat(&out, "  %-44s %7s %7s\n", "function", "self", "incl");
  for (const FunctionRow& row : a.profile) {
    absl::StrAppendFormat(&out, "  %-44s %7d %7d\n", row.function, row.self, row.inclusive);
  }
  if (!a.stages.empty()) {
    absl::StrAppendFormat(&out, "\nstages of op 1 (kernel instructions%s)\n",
                          trace.kernel == Kernel::kLinux
                              ? "; Linux's functions by its stage table, vmm/trace/linux_stages.cc"
                              : "");
    uint64_t total = 0;
    for (const StageRow& row : a.stages) {
      total = AddCounts(total, row.kernel_insns);
      absl::StrAppendFormat(&out, "  %-26s %7s  %s\n", row.stage,
                            row.opaque && row.kernel_insns == 0 ? "-"
                                                                : absl::StrCat(row.kernel_insns),
                            row.detail);
    }
    absl::StrAppendFormat(&out, "  %-26s %7d%s\n", "total", total,
                          a.ledger_per_op ? absl::StrFormat("  (ledger: %d per op)", *a.ledger_per_op)
                                          : "");
  }
  return out;
}

Json TraceToJson(const TraceSource& source, const Trace& trace, const Analysis& a) {
  Json doc;
  doc["schema"] = "sigvisor.trace/1";
  doc["image"] = source.image;
  doc["variant"] = source.variant.empty() ? Json(nullptr) : Json(source.variant);
  doc["cmdline"] = source.cmdline;
  doc["host"] = trace.host_kind;
  doc["kernel"] = KernelName(trace.kernel);
  doc["trap_mechanism"] = TrapMechanismName(trace.trap);
  doc["phase"] = trace.phase;
  doc["ops"] = trace.ops;
  doc["complete"] = trace.complete;
  doc["stopped_why"] = trace.stopped_why.empty() ? Json(nullptr) : Json(trace.stopped_why);
  doc["opaque_reason"] = trace.opaque_reason.empty() ? Json(nullptr) : Json(trace.opaque_reason);
  doc["single_steps"] = trace.vmm_steps;
  Json counts;
  counts["phase_kernel_insns"] = a.phase_kernel_insns;
  counts["phase_executed"] = a.phase_distinct;
  counts["marker_kernel_insns"] = a.marker_kernel_insns;
  Json per_op = Json::array();
  for (const OpSlice& s : a.ops) per_op.push_back(s.kernel_insns);
  counts["per_op"] = per_op;
  counts["ops_note"] = a.ops_note.empty() ? Json(nullptr) : Json(a.ops_note);
  counts["ledger_per_op"] = a.ledger_per_op ? Json(*a.ledger_per_op) : Json(nullptr);
  counts["ledger_marker"] = a.ledger_marker ? Json(*a.ledger_marker) : Json(nullptr);
  counts["matches_ledger"] = a.matches_ledger ? Json(*a.matches_ledger) : Json(nullptr);
  doc["counts"] = counts;
  Json profile = Json::array();
  for (const FunctionRow& row : a.profile) {
    profile.push_back({{"function", row.function}, {"self", row.self}, {"inclusive", row.inclusive}});
  }
  doc["profile"] = profile;
  Json stages = Json::array();
  for (const StageRow& row : a.stages) {
    stages.push_back({{"stage", row.stage},
                      {"kernel_insns", row.kernel_insns},
                      {"opaque", row.opaque},
                      {"covers", row.detail}});
  }
  doc["stages"] = stages;
  std::vector<std::string> stage_of(trace.entries.size());
  for (const OpSlice& s : a.ops) {
    const auto [begin, end] = EntriesOf(trace, s);
    std::vector<std::string> labels = ClassifyStages(trace, begin, end, nullptr);
    for (size_t i = begin; i < end; ++i) stage_of[i] = labels[i - begin];
  }
  const std::vector<std::optional<size_t>> op = OpOf(trace, a);
  Json entries = Json::array();
  for (size_t i = 0; i < trace.entries.size(); ++i) {
    entries.push_back(EntryJson(trace.entries[i], op[i], stage_of[i]));
  }
  doc["entries"] = entries;
  ReplaceNonUtf8(doc);
  return doc;
}

TraceDiff DiffTraces(const TraceSource& source_a, const Trace& a, const Analysis& analysis_a,
                     const TraceSource& source_b, const Trace& b, const Analysis& analysis_b) {
  TraceDiff diff;
  const std::string name_a = source_a.variant.empty() ? source_a.image : source_a.variant;
  const std::string name_b = source_b.variant.empty() ? source_b.image : source_b.variant;
  Json& j = diff.json;
  j["left"] = {
      {"image", source_a.image},
      {"variant", name_a},
      {"kernel", KernelName(a.kernel)},
      {"per_op", analysis_a.ops.empty() ? Json(nullptr) : Json(analysis_a.ops[0].kernel_insns)}};
  j["right"] = {
      {"image", source_b.image},
      {"variant", name_b},
      {"kernel", KernelName(b.kernel)},
      {"per_op", analysis_b.ops.empty() ? Json(nullptr) : Json(analysis_b.ops[0].kernel_insns)}};
  std::string& out = diff.text;
  if (analysis_a.ops.empty() || analysis_b.ops.empty()) {
    out = "the two traces cannot be compared op by op: " +
          (analysis_a.ops.empty() ? analysis_a.ops_note : analysis_b.ops_note) + "\n";
    j["note"] = out;
    ReplaceNonUtf8(j);
    return diff;
  }
  const OpSlice& op_a = analysis_a.ops[0];
  const OpSlice& op_b = analysis_b.ops[0];
  absl::StrAppendFormat(&out, "op 1 of phase %s: %s (left) vs %s (right)\n", a.phase, name_a,
                        name_b);
  absl::StrAppendFormat(&out, "  kernel instructions: %d vs %d (%s)\n", op_a.kernel_insns,
                        op_b.kernel_insns, Delta(op_a.kernel_insns, op_b.kernel_insns));

  // Stages side by side, in the order a signal passes them (stages.h), so that the
  // model's and Linux's rows of one step are one row.
  std::vector<std::string> stage_order;
  std::map<std::string, std::pair<uint64_t, uint64_t>> stages;
  for (const StageRow& row : analysis_a.stages) {
    if (!stages.count(row.stage)) stage_order.push_back(row.stage);
    stages[row.stage].first = AddCounts(stages[row.stage].first, row.kernel_insns);
  }
  for (const StageRow& row : analysis_b.stages) {
    if (!stages.count(row.stage)) stage_order.push_back(row.stage);
    stages[row.stage].second = AddCounts(stages[row.stage].second, row.kernel_insns);
  }
  std::stable_sort(
      stage_order.begin(), stage_order.end(),
      [](const std::string& x, const std::string& y) { return stage::Rank(x) < stage::Rank(y); });
  absl::StrAppendFormat(&out, "\n  %-26s %7s %7s %7s\n", "stage", "left", "right", "delta");
  Json stage_json = Json::array();
  for (const std::string& s : stage_order) {
    auto [l, r] = stages[s];
    absl::StrAppendFormat(&out, "  %-26s %7d %7d %7s\n", s, l, r, Delta(l, r));
    stage_json.push_back({{"stage", s}, {"left", l}, {"right", r}});
  }
  j["stages"] = stage_json;
  if (a.kernel != b.kernel) {
    // Two kernels share no code: their functions and instructions do not pair up. Each
    // one's profile is in its own summary.
    out +=
        "\n  (two different kernels: compared by stage only; each one's functions are in "
        "its profile above)\n";
    j["functions"] = Json::array();
    j["instructions"] = nullptr;
    ReplaceNonUtf8(j);
    return diff;
  }

  // Functions that differ.
  std::map<std::string, std::pair<uint64_t, uint64_t>> fns;
  std::vector<std::string> fn_order;
  for (const FunctionRow& row : analysis_a.profile) {
    if (!fns.count(row.function)) fn_order.push_back(row.function);
    fns[row.function].first = row.self;
  }
  for (const FunctionRow& row : analysis_b.profile) {
    if (!fns.count(row.function)) fn_order.push_back(row.function);
    fns[row.function].second = row.self;
  }
  absl::StrAppendFormat(&out, "\n  functions that differ (self)   %7s %7s %7s\n", "left", "right",
                        "delta");
  Json fn_json = Json::array();
  for (const std::string& f : fn_order) {
    auto [l, r] = fns[f];
    if (l == r) continue;
    absl::StrAppendFormat(&out, "  %-30s %7d %7d %7s\n", f, l, r, Delta(l, r));
    fn_json.push_back({{"function", f}, {"left", l}, {"right", r}});
  }
  j["functions"] = fn_json;

  // Instructions, aligned by a longest common subsequence of their keys.
  std::vector<const Entry*> left, right;
  const auto [begin_a, end_a] = EntriesOf(a, op_a);
  const auto [begin_b, end_b] = EntriesOf(b, op_b);
  for (size_t i = begin_a; i < end_a; ++i) left.push_back(&a.entries[i]);
  for (size_t i = begin_b; i < end_b; ++i) right.push_back(&b.entries[i]);
  const size_t n = left.size(), m = right.size();
  constexpr size_t kMaxCells = 40'000'000;
  if (n > 0 && m > kMaxCells / n) {  // n * m > kMaxCells, without the product
    out += "\n  (the ops are too long to align instruction by instruction)\n";
    j["instructions"] = nullptr;
    ReplaceNonUtf8(j);
    return diff;
  }
  std::vector<std::string> ka(n), kb(m);
  for (size_t i = 0; i < n; ++i) ka[i] = AlignKey(*left[i]);
  for (size_t i = 0; i < m; ++i) kb[i] = AlignKey(*right[i]);
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t k) -> uint32_t& { return lcs[i * (m + 1) + k]; };
  for (size_t i = n; i-- > 0;) {
    for (size_t k = m; k-- > 0;) {
      at(i, k) = ka[i] == kb[k] ? at(i + 1, k + 1) + 1 : std::max(at(i + 1, k), at(i, k + 1));
    }
  }
  struct Row {
    const Entry* l;
    const Entry* r;
  };
  std::vector<Row> rows;
  for (size_t i = 0, k = 0; i < n || k < m;) {
    if (i < n && k < m && ka[i] == kb[k]) {
      rows.push_back({left[i++], right[k++]});
    } else if (k >= m || (i < n && at(i + 1, k) >= at(i, k + 1))) {
      rows.push_back({left[i++], nullptr});
    } else {
      rows.push_back({nullptr, right[k++]});
    }
  }
  auto cell = [](const Entry* e) -> std::string {
    if (e == nullptr) return "";
    if (e->kind == Entry::Kind::kOpaque) return absl::StrCat("[CPL3 opaque, left by ", e->exit_via, "]");
    return absl::StrFormat("%-28s %s", e->symbol, e->text);
  };
  constexpr size_t kContext = 2;
  std::vector<bool> show(rows.size(), false);
  size_t identical = 0;
  Json only_left = Json::array(), only_right = Json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].l != nullptr && rows[i].r != nullptr) {
      ++identical;
      continue;
    }
    for (size_t k = i >= kContext ? i - kContext : 0; k <= i + kContext && k < rows.size(); ++k) {
      show[k] = true;
    }
    if (rows[i].l != nullptr) only_left.push_back(EntryJson(*rows[i].l, 0, ""));
    if (rows[i].r != nullptr) only_right.push_back(EntryJson(*rows[i].r, 0, ""));
  }
  j["instructions"] = {{"aligned", identical},
                       {"left_only", only_left},
                       {"right_only", only_right}};
  absl::StrAppendFormat(&out,
                        "\n  instructions: %d aligned in both, %d only left (<), %d only right (>)\n",
                        identical, only_left.size(), only_right.size());
  size_t hidden = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!show[i]) {
      ++hidden;
      continue;
    }
    if (hidden > 0) {
      absl::StrAppendFormat(&out, "    ... %d aligned instructions ...\n", hidden);
      hidden = 0;
    }
    const char mark = rows[i].l && rows[i].r ? '=' : (rows[i].l ? '<' : '>');
    absl::StrAppendFormat(&out, "  %c %-64s | %s\n", mark, cell(rows[i].l), cell(rows[i].r));
  }
  if (hidden > 0) absl::StrAppendFormat(&out, "    ... %d aligned instructions ...\n", hidden);
  ReplaceNonUtf8(j);
  return diff;
}

}  // namespace sigvisor::trace
