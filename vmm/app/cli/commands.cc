#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "vmm/app/cli/bench_commands.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/exit_status.h"

namespace sigvisor::cli {
namespace {

std::string FlagError(const Command& command, const absl::Status& status);

// One command's entry: its flag table over a fresh options struct, parsed, then run.
template <typename Options, FlagTable (*kFlags)(Options&), int (*kRun)(const Options&)>
constexpr Command Define(std::string_view name, const CommandHelp& help) {
  return {name, help.summary, help.description,
          [] {
            Options defaults;
            FlagTable table = kFlags(defaults);
            for (Flag& flag : table) flag.set = nullptr;  // they would write to `defaults`
            return table;
          },
          [](const Command& self, std::span<char* const> argv) {
            Options options;
            if (absl::Status s = ParseFlags(kFlags(options), argv, options); !s.ok()) {
              return ReportError(FlagError(self, s));
            }
            return kRun(options);
          }};
}

}  // namespace

std::span<const Command> Commands() {
  // The commands in the order `sigvisor help` lists them; each one's help is beside
  // its code (command.h).
  static const Command kCommands[] = {
      Define<RunOptions, RunFlags, RunCommand>("run", kRunHelp),
      Define<SnapshotOptions, SnapshotFlags, SnapshotCommand>("snapshot", kSnapshotHelp),
      Define<ProbeCommandOptions, ProbeFlags, ProbeCommand>("probe", kProbeHelp),
      Define<ImagesOptions, ImagesFlags, ImagesCommand>("images", kImagesHelp),
      Define<ImageOptions, ImageFlags, ImageCommand>("image", kImageHelp),
      Define<SitesOptions, SitesFlags, SitesCommand>("sites", kSitesHelp),
      Define<TraceOptions, TraceFlags, TraceCommand>("trace", kTraceHelp),
      Define<BenchOptions, BenchFlags, BenchCommand>("bench", kBenchHelp),
      Define<StudyOptions, StudyFlags, StudyCommand>("study", kStudyHelp),
      Define<MergeOptions, MergeFlags, MergeCommand>("merge", kMergeHelp),
  };
  return kCommands;
}

const Command* FindCommand(std::string_view name) {
  for (const Command& command : Commands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

int ReportError(std::string_view message) {
  std::fprintf(stderr, "sigvisor: error: %.*s\n", static_cast<int>(message.size()),
               message.data());
  return kExitSigvisorFailed;
}

int ReportError(const absl::Status& status) { return ReportError(std::string(status.message())); }

namespace {

// A flag the command's table lacks is another command's ("does not apply") or no
// command's ("unknown flag"); any other parse error says so itself.
std::string FlagError(const Command& command, const absl::Status& status) {
  if (!absl::IsNotFound(status)) return std::string(status.message());
  const std::string name(status.message());
  const std::string spelled = Spelled(name);
  for (const Command& other : Commands()) {
    for (const Flag& flag : other.flags()) {
      if (flag.name == name) {
        return absl::StrFormat("%s does not apply to `sigvisor %s` (see `sigvisor help %s`)",
                               spelled, command.name, command.name);
      }
    }
  }
  return absl::StrFormat("unknown flag %s (see `sigvisor help %s`)", spelled, command.name);
}

}  // namespace

std::string HelpText(const Command* command) {
  std::string out;
  if (command == nullptr) {
    out = "sigvisor: a KVM hypervisor for measuring the cost of signal delivery.\n\n"
          "usage: sigvisor <command> [flags]\n\ncommands:\n";
    for (const Command& c : Commands()) {
      absl::StrAppendFormat(&out, "  %-8s %s\n", c.name, c.summary);
    }
    out += "  help     show this, or `sigvisor help <command>` for a command's flags\n";
    out += "\n--version prints the version and the commit sigvisor was built from (every JSON\n"
           "document names both in its \"sigvisor\" member).\n\n";
    out += ExitStatusHelp();
    return out;
  }
  absl::StrAppendFormat(&out, "usage: sigvisor %s [flags]\n\n%s\n\nflags:\n", command->name,
                        command->description);
  out += FlagHelp(command->flags());
  return out;
}

}  // namespace sigvisor::cli
