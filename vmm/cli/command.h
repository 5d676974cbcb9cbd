// The CLI's verbs (kvmtool style: `sigvisor run`, `sigvisor probe`, ...).
#ifndef SIGVISOR_VMM_CLI_COMMAND_H_
#define SIGVISOR_VMM_CLI_COMMAND_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace sigvisor::cli {

struct Command {
  std::string_view name;
  std::string_view summary;      // one line for `sigvisor help`
  std::string_view description;  // what it does and prints, for `sigvisor help NAME`
  std::vector<std::string_view> flags;  // the flags it reads
  // Runs with the positional arguments after the verb; returns the exit status.
  int (*run)(std::span<char* const> args);
};

std::span<const Command> Commands();
const Command* FindCommand(std::string_view name);

// Prints "sigvisor: error: <message>" (one line) to stderr and returns 125
// (exit_status.h: sigvisor failed), the status for bad input and for anything that
// kept a run from starting.
int ReportError(const absl::Status& status);
int ReportError(std::string_view message);

// "--workload does not apply to `sigvisor probe`" for a flag given on the command
// line that `command` does not read; empty when all is well.
std::string FlagsNotFor(const Command& command);

// Help for one command (flags with defaults) or, for nullptr, the overview.
std::string HelpText(const Command* command);

int RunCommand(std::span<char* const> args);
int ProbeCommand(std::span<char* const> args);
int ImagesCommand(std::span<char* const> args);
int ImageCommand(std::span<char* const> args);
int SitesCommand(std::span<char* const> args);
int TraceCommand(std::span<char* const> args);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_CLI_COMMAND_H_
