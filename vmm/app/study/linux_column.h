// A seed study's Linux column: the seed's figures (DR7 writes, %gs prefixes, the frame
// set-up, the dequeue) counted in one traced op of each phase the study needs
// (trace::CountOp), in a stock Linux kernel and, counted the same way, in the study's
// old and new builds of the bundled kernel. The study's own tables are left as they
// were; the column is one table under them.
//
// What is traced: the study's own workload where Linux's trace of it works, and the
// nearest one that does otherwise (dequeue: sigpingpong's two processes wait for each
// other in rt_sigsuspend, which cannot finish while the tracer holds interrupts back;
// lat_sig's sig_hndl sends the same user signal to itself and dequeues it the same way).
#ifndef SIGVISOR_VMM_APP_STUDY_LINUX_COLUMN_H_
#define SIGVISOR_VMM_APP_STUDY_LINUX_COLUMN_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "vmm/app/study/study.h"
#include "vmm/loader/symbol_table.h"
#include "vmm/trace/op_counts.h"

namespace sigvisor::study {

// A phase a study traces.
struct LinuxPhase {
  std::string_view workload;
  std::string_view phase;
};
// The phases study `name` traces, in order; empty for a study without a Linux column
// (pvsig: not a seed's).
std::vector<LinuxPhase> LinuxPhasesFor(std::string_view name);

// One kernel's traced ops, one per phase of LinuxPhasesFor, and the symbols that name
// its code (for the frame code's text size; null: not counted).
struct TracedKernel {
  std::vector<std::pair<std::string, trace::OpCounts>> ops;  // phase, its op's counts
  const SymbolTable* symbols = nullptr;
  const trace::OpCounts* Find(std::string_view phase) const;
};

struct LinuxFigure {
  std::string metric;  // "dr7_writes_per_op"
  std::string label;   // "DR7 writes per signal"
  std::string phase;
  Unit unit = Unit::kInstructions;
  double linux_value = 0;
  std::optional<double> old_value, new_value;  // the study's builds; none if not traced
  std::string detail;                          // how it is counted
};

struct LinuxColumn {
  std::string kernel;      // the image as given
  std::string absent_why;  // set: no figures, and why not
  // Why the builds' values are missing, when Linux's are there ("" when they are not).
  std::string builds_absent_why;
  std::vector<LinuxFigure> figures;
};

// The column of study `name`: Linux's traced ops, and the old and new builds' (null
// when they could not be traced: `builds_why` says why).
LinuxColumn MakeLinuxColumn(std::string_view name, std::string kernel,
                            const TracedKernel& linux_kernel, const TracedKernel* old_build,
                            const TracedKernel* new_build, std::string builds_why = "");

// A column with no figures, saying why (the Linux trace failed).
LinuxColumn AbsentLinuxColumn(std::string kernel, std::string why);

// Appends the column's table to the report's text and sets report.linux_column.
void AddLinuxColumn(StudyReport& report, const LinuxColumn& column);

nlohmann::ordered_json LinuxColumnToJson(const LinuxColumn& column);

}  // namespace sigvisor::study

#endif  // SIGVISOR_VMM_APP_STUDY_LINUX_COLUMN_H_
