// The CLI's verbs (kvmtool style: `sigvisor run`, `sigvisor probe`, ...).
#ifndef SIGVISOR_VMM_APP_CLI_COMMAND_H_
#define SIGVISOR_VMM_APP_CLI_COMMAND_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "vmm/app/cli/flag_table.h"
#include "vmm/app/cli/options.h"

namespace sigvisor::cli {

// A command's help: the line `sigvisor help` gives it and what `sigvisor help NAME`
// prints above its flags. Each command's is defined in the file that implements the
// command (kRunHelp in run_command.cc, ...), beside its code; Commands() wires them.
struct CommandHelp {
  std::string_view summary;      // one line for `sigvisor help`
  std::string_view description;  // what it does and prints, for `sigvisor help NAME`
};

struct Command {
  std::string_view name;
  std::string_view summary;      // one line for `sigvisor help`
  std::string_view description;  // what it does and prints, for `sigvisor help NAME`
  // The command's flags over its options' defaults, without setters: what help
  // lists and what other commands refuse as "does not apply" (options.cc).
  FlagTable (*flags)();
  // Parses the words after the verb into the command's options and runs it; returns
  // the exit status.
  int (*run)(const Command& self, std::span<char* const> argv);
};

std::span<const Command> Commands();
const Command* FindCommand(std::string_view name);

// Prints "sigvisor: error: <message>" (one line) to stderr and returns 125
// (exit_status.h: sigvisor failed), the status for bad input and for anything that
// kept a run from starting.
int ReportError(const absl::Status& status);
int ReportError(std::string_view message);

// Help for one command (flags with defaults) or, for nullptr, the overview.
std::string HelpText(const Command* command);

// The commands, each with its parsed options (arguments in options.args).
int RunCommand(const RunOptions& options);
int ProbeCommand(const ProbeCommandOptions& options);
int ImagesCommand(const ImagesOptions& options);
int ImageCommand(const ImageOptions& options);
int SitesCommand(const SitesOptions& options);
int TraceCommand(const TraceOptions& options);
int BenchCommand(const BenchOptions& options);
int StudyCommand(const StudyOptions& options);
int MergeCommand(const MergeOptions& options);
int SnapshotCommand(const SnapshotOptions& options);

// Their help, each defined (constexpr: constant-initialized, so there is no order of
// initialization to mind) beside its command.
extern const CommandHelp kRunHelp;     // run_command.cc
extern const CommandHelp kProbeHelp;   // probe_command.cc
extern const CommandHelp kImagesHelp;  // images_command.cc
extern const CommandHelp kImageHelp;   // image_command.cc
extern const CommandHelp kSitesHelp;   // sites_command.cc
extern const CommandHelp kTraceHelp;   // trace_command.cc
extern const CommandHelp kBenchHelp;   // bench_command.cc
extern const CommandHelp kStudyHelp;   // study_command.cc
extern const CommandHelp kMergeHelp;   // merge_command.cc
extern const CommandHelp kSnapshotHelp;  // snapshot_command.cc

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_COMMAND_H_
