#include "vmm/app/study/linux_column.h"

#include <functional>

#include "absl/strings/str_format.h"
#include "vmm/app/study/study_internal.h"
#include "vmm/trace/stages.h"

namespace sigvisor::study {
namespace {

using json = nlohmann::ordered_json;

double Stage(const trace::OpCounts& c, std::string_view stage) {
  auto it = c.stage_insns.find(std::string(stage));
  return it == c.stage_insns.end() ? 0 : double(it->second);
}

// The text of the frame code: the frame stages' functions, each as its symbol says.
std::optional<double> FrameCodeBytes(const trace::OpCounts& c, const SymbolTable* symbols) {
  if (symbols == nullptr) return std::nullopt;
  uint64_t bytes = 0;
  for (const std::string& f : c.frame_setup_functions) {
    if (std::optional<Symbol> s = symbols->Find(f); s) bytes += s->size;
  }
  return double(bytes);
}

// One figure of a study: what it counts in a traced op (nullopt: this kernel cannot
// say, e.g. without symbols).
using Count = std::function<std::optional<double>(const trace::OpCounts&, const SymbolTable*)>;
struct FigureDef {
  std::string_view metric;
  std::string_view label;
  std::string_view phase;
  Unit unit;
  std::string_view detail;
  Count count;
};

// A count of OpCounts by field, or by a stage's kernel instructions.
Count Field(uint64_t trace::OpCounts::*field) {
  return [field](const trace::OpCounts& c, const SymbolTable*) { return double(c.*field); };
}
Count Stages(std::vector<std::string_view> stages) {
  return [stages](const trace::OpCounts& c, const SymbolTable*) {
    double sum = 0;
    for (std::string_view stage : stages) sum += Stage(c, stage);
    return std::optional<double>(sum);
  };
}

FigureDef KernelInsns(std::string_view label, std::string_view phase) {
  return {"kernel_insns_per_op",
          label,
          phase,
          Unit::kInstructions,
          "kernel instructions as an emulating host's KVM counts them (a rep that moves "
          "anything twice)",
          Field(&trace::OpCounts::kernel_insns)};
}

std::vector<FigureDef> FiguresOf(std::string_view name) {
  using trace::OpCounts;
  constexpr std::string_view kGsDetail = "executed kernel instructions with the 0x65 prefix";
  if (name == "dr7") {
    return {
        KernelInsns("kernel instructions per signal", "divzero"),
        {"dr7_writes_per_op", "DR7 writes per signal", "divzero", Unit::kInstructions,
         "mov to %dr7 executed", Field(&OpCounts::dr7_writes)},
        {"dr_write_exits_under_patch", "exits its DR writes cost under patch", "divzero",
         Unit::kExits, "one per mov to a debug register, as --trap=patch traps each",
         Field(&OpCounts::dr_writes)},
        {"dr7_stage_insns", "DR7 write stage", "divzero", Unit::kInstructions,
         "kernel instructions of the DR7 write stage (trace --stages)",
         Stages({trace::stage::kDr7Write})},
    };
  }
  if (name == "pda") {
    return {
        KernelInsns("kernel instructions per pipe op", "pipe_rw"),
        {"gs_prefixed_per_op", "%gs-prefixed instructions per pipe op", "pipe_rw",
         Unit::kInstructions, kGsDetail, Field(&OpCounts::gs_prefixed)},
        {"swapgs_per_op", "swapgs per pipe op", "pipe_rw", Unit::kInstructions,
         "each a segment-load trap under --trap=patch", Field(&OpCounts::swapgs)},
        {"gs_prefixed_per_op", "%gs-prefixed instructions per signal", "divzero",
         Unit::kInstructions, kGsDetail, Field(&OpCounts::gs_prefixed)},
    };
  }
  if (name == "cerr") {
    return {
        KernelInsns("kernel instructions per signal", "sig_hndl"),
        {"frame_setup_insns_per_op", "frame set-up per signal", "sig_hndl", Unit::kInstructions,
         "kernel instructions of the frame set-up stage (with Linux's FPU frame)",
         Stages({trace::stage::kFrameSetup, trace::stage::kFpuFrame})},
        {"user_copy_calls_per_op", "user-copy calls in the frame set-up", "sig_hndl",
         Unit::kInstructions,
         "calls of a user-copy routine (copy_to_user, __put_user_*, clear_user, ...); code that "
         "writes the frame inline (Linux's unsafe_put_user) makes none",
         Field(&OpCounts::user_copy_calls_in_frame_setup)},
        {"user_access_windows_per_op", "user-access windows (stac) per signal", "sig_hndl",
         Unit::kInstructions, "SMAP lifted for a user access; none where the kernel has no SMAP",
         Field(&OpCounts::user_access_windows)},
        {"frame_code_text_bytes", "text of the frame code", "sig_hndl", Unit::kBytes,
         "the frame stages' functions, each as its symbol's size says (Linux's: to the next "
         "symbol)",
         FrameCodeBytes},
    };
  }
  if (name == "dequeue") {
    return {
        KernelInsns("kernel instructions per signal", "sig_hndl"),
        {"dequeue_insns_per_op", "dequeue per signal", "sig_hndl", Unit::kInstructions,
         "kernel instructions of the dequeue stage (get_signal), without Linux's ucounts",
         Stages({trace::stage::kDequeue})},
        {"dequeue_bytes_stored", "bytes stored by the dequeue", "sig_hndl", Unit::kBytes,
         "stores to memory other than the stack in the dequeue stage",
         Field(&OpCounts::dequeue_bytes_stored)},
        {"dequeue_largest_block", "largest block it stores", "sig_hndl", Unit::kBytes,
         "adjacent stores to one base register: a structure copied field by field, as Linux "
         "copies its 48-byte kernel_siginfo (a memcpy's rep movs is not counted)",
         Field(&OpCounts::dequeue_largest_block)},
    };
  }
  return {};
}

std::optional<double> Value(const FigureDef& f, const TracedKernel* kernel) {
  if (kernel == nullptr) return std::nullopt;
  const trace::OpCounts* c = kernel->Find(f.phase);
  if (c == nullptr) return std::nullopt;
  return f.count(*c, kernel->symbols);
}

std::string Cell(const std::optional<double>& v) { return v ? Num(*v) : "-"; }

}  // namespace

const trace::OpCounts* TracedKernel::Find(std::string_view phase) const {
  for (const auto& [name, counts] : ops) {
    if (name == phase) return &counts;
  }
  return nullptr;
}

std::vector<LinuxPhase> LinuxPhasesFor(std::string_view name) {
  if (name == "dr7") return {{"divzero", "divzero"}};
  if (name == "pda") return {{"pipe_rw", "pipe_rw"}, {"divzero", "divzero"}};
  if (name == "cerr" || name == "dequeue") return {{"lat_sig", "sig_hndl"}};
  return {};
}

LinuxColumn AbsentLinuxColumn(std::string kernel, std::string why) {
  LinuxColumn column;
  column.kernel = std::move(kernel);
  column.absent_why = std::move(why);
  return column;
}

LinuxColumn MakeLinuxColumn(std::string_view name, std::string kernel,
                            const TracedKernel& linux_kernel, const TracedKernel* old_build,
                            const TracedKernel* new_build, std::string builds_why) {
  LinuxColumn column;
  column.kernel = std::move(kernel);
  column.builds_absent_why = std::move(builds_why);
  for (const FigureDef& f : FiguresOf(name)) {
    const std::optional<double> value = Value(f, &linux_kernel);
    if (!value) {
      if (linux_kernel.Find(f.phase) == nullptr) {
        return AbsentLinuxColumn(column.kernel, absl::StrFormat("no traced op of %s", f.phase));
      }
      continue;  // a figure that needs symbols the kernel did not give
    }
    column.figures.push_back({.metric = std::string(f.metric),
                              .label = std::string(f.label),
                              .phase = std::string(f.phase),
                              .unit = f.unit,
                              .linux_value = *value,
                              .old_value = Value(f, old_build),
                              .new_value = Value(f, new_build),
                              .detail = std::string(f.detail)});
  }
  return column;
}

json LinuxColumnToJson(const LinuxColumn& column) {
  json figures = json::array();
  for (const LinuxFigure& f : column.figures) {
    figures.push_back({{"metric", f.metric},
                       {"label", f.label},
                       {"phase", f.phase},
                       {"unit", UnitName(f.unit)},
                       {"linux", f.linux_value},
                       {"old", f.old_value ? json(*f.old_value) : json(nullptr)},
                       {"new", f.new_value ? json(*f.new_value) : json(nullptr)},
                       {"detail", f.detail}});
  }
  auto text_or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  return {{"kernel", text_or_null(column.kernel)},
          {"absent_why", text_or_null(column.absent_why)},
          {"builds_absent_why", text_or_null(column.builds_absent_why)},
          {"figures", figures}};
}

void AddLinuxColumn(StudyReport& report, const LinuxColumn& column) {
  report.linux_column = LinuxColumnToJson(column);
  std::string& out = report.text;
  if (!column.absent_why.empty()) {
    absl::StrAppendFormat(&out, "\nLinux: not measured: %s.\n", column.absent_why);
    return;
  }
  const bench::Matrix& m = report.bench.matrix;
  absl::StrAppendFormat(&out,
                        "\nLinux beside the model (%s), one traced op of each phase, counted "
                        "alike in all three (docs/seeds.md):\n",
                        column.kernel);
  absl::StrAppendFormat(&out, "  %-46s %12s %12s %12s\n", "",
                        m.variants.size() > 0 ? m.variants[0].name : "old",
                        m.variants.size() > 1 ? m.variants[1].name : "new", "Linux");
  for (const LinuxFigure& f : column.figures) {
    const std::string label =
        f.phase == report.def->workload ? f.label : absl::StrFormat("%s: %s", f.phase, f.label);
    absl::StrAppendFormat(&out, "  %-46s %12s %12s %12s\n", label, Cell(f.old_value),
                          Cell(f.new_value), Num(f.linux_value));
  }
  if (!column.builds_absent_why.empty()) {
    absl::StrAppendFormat(&out, "  (the builds' columns: %s)\n", column.builds_absent_why);
  }
}

}  // namespace sigvisor::study
