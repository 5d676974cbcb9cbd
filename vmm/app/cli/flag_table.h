// A command's flags as a table, as kvmtool's builtins declare theirs: each entry
// names a flag, says whether it takes a value, and parses that value into the
// command's own options struct. Which flags a command accepts, what `sigvisor help
// <command>` lists (with the struct's initial values as defaults) and what the command
// refuses all come from its table (options.cc); nothing else reads the command line.
#ifndef SIGVISOR_VMM_APP_CLI_FLAG_TABLE_H_
#define SIGVISOR_VMM_APP_CLI_FLAG_TABLE_H_

#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sigvisor::cli {

struct Flag {
  std::string name;          // as help spells it ("max_output", "o"); dashes work too
  std::string help;
  std::string default_text;  // the options struct's value before parsing
  bool takes_value = true;   // false: a switch (--json, --json=false, --nojson)
  // Parses one occurrence's value into the options struct; the error says what is
  // wanted (the caller names the flag and the value).
  std::function<absl::Status(std::string_view value)> set;
};
using FlagTable = std::vector<Flag>;

// Entries for each kind of value, writing to `*value` (which must outlive the table).
Flag StringFlag(std::string_view name, std::string* value, std::string_view help);
Flag BoolFlag(std::string_view name, bool* value, std::string_view help);
Flag Int32Flag(std::string_view name, int32_t* value, std::string_view help);
Flag Uint32Flag(std::string_view name, uint32_t* value, std::string_view help);
Flag Uint64Flag(std::string_view name, uint64_t* value, std::string_view help);
Flag DurationFlag(std::string_view name, absl::Duration* value, std::string_view help);
// Every occurrence adds one element, commas and all (`--module a,b --module c`).
Flag ListFlag(std::string_view name, std::vector<std::string>* value, std::string_view help);

// How a flag is typed: "--memory", and a one-letter one "-o".
std::string Spelled(std::string_view name);

// A duration: 500ms, 10s, 2m, 1h30m; a bare number is seconds (20, 1.5).
absl::StatusOr<absl::Duration> ParseDuration(std::string_view text);

// What a command line gave besides the flags' values: the arguments that are not
// flags (everything after "--" among them), and which flags appeared, by table name.
struct CommandLine {
  std::vector<std::string> args;
  std::set<std::string, std::less<>> given;
  bool Given(std::string_view name) const { return given.contains(name); }
};

// Parses `argv` (the words after the verb) against `table` into the options the
// table writes to and `line`: --name=value, --name value, -name likewise (-o FILE),
// dashes and underscores alike in names, --noname for a switch. A name the table
// does not have is NotFound with the name, spelled as tables spell it, as the
// message (the caller knows whether another command has it); a bad value is
// InvalidArgument, one line naming the flag and the value.
absl::Status ParseFlags(const FlagTable& table, std::span<char* const> argv, CommandLine& line);

// "  --memory      guest RAM in MiB ... (default: 32)", one line per flag.
std::string FlagHelp(const FlagTable& table);

// The first of `names` that `line` gave, or "" (for flags that apply to one mode of a
// command only).
std::string FirstGiven(const CommandLine& line, std::span<const std::string_view> names);

}  // namespace sigvisor::cli

#endif  // SIGVISOR_VMM_APP_CLI_FLAG_TABLE_H_
