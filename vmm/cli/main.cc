// sigvisor: the command-line entry point. `sigvisor <command> [flags]`.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "vmm/cli/build_info/build_info.h"
#include "vmm/cli/command.h"
#include "vmm/cli/exit_status.h"
#include "vmm/cli/repeated_flag.h"

namespace {

bool IsHelpFlag(std::string_view arg) {
  return arg == "--help" || arg == "-h" || arg == "-help" || arg == "--helpfull";
}

absl::CommandLineFlag* FindFlag(std::string_view name) {
  return absl::FindCommandLineFlag(absl::string_view(name.data(), name.size()));
}

// Unknown flags and unparsable values get sigvisor's one-line error (and its status
// for bad input)
// rather than Abseil's own message and exit(1): checked here, before parsing.
std::string CheckFlags(int argc, char** argv, const char* verb) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    const size_t equals = arg.find('=');
    std::string_view name = arg.substr(0, equals);
    absl::CommandLineFlag* flag = FindFlag(name);
    if (flag == nullptr && name.substr(0, 2) == "no" && FindFlag(name.substr(2)) != nullptr &&
        FindFlag(name.substr(2))->IsOfType<bool>()) {
      continue;  // --nojson
    }
    if (flag == nullptr) {
      return "unknown flag --" + std::string(name) + " (see `sigvisor help " + verb + "`)";
    }
    std::string value;
    if (equals != std::string_view::npos) {
      value = std::string(arg.substr(equals + 1));
    } else if (flag->IsOfType<bool>()) {
      continue;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return "--" + std::string(name) + " needs a value";
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return "--" + std::string(name) + " '" + value + "': " + error;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using sigvisor::cli::FindCommand;
  using sigvisor::cli::HelpText;

  absl::SetProgramUsageMessage("a KVM hypervisor for measuring signal delivery; see `sigvisor help`");
  // The verb is the first argument that is not a flag; help is handled here so that
  // it shows only the flags the verb reads.
  // Flag names may be spelled with dashes (--no-sandbox, --max-output): Abseil's are
  // underscores, so the name part (up to '=') is rewritten in place.
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") break;
    if (argv[i][0] != '-' || argv[i][1] != '-') continue;
    for (char* c = argv[i] + 2; *c != '\0' && *c != '='; ++c) {
      if (*c == '-') *c = '_';
    }
  }
  const char* verb = nullptr;
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") break;
    if (std::string_view(argv[i]) == "--version") {  // with any command: it runs nothing
      std::printf("%s\n", sigvisor::cli::VersionLine().c_str());
      return 0;
    }
  }
  for (int i = 1; i < argc; ++i) {
    if (IsHelpFlag(argv[i])) help = true;
    else if (!verb && argv[i][0] != '-') verb = argv[i];
  }
  if (verb == nullptr || std::strcmp(verb, "help") == 0) {
    const sigvisor::cli::Command* topic = nullptr;
    if (verb != nullptr) {
      for (int i = 1; i < argc; ++i) {
        if (argv[i] != verb && argv[i][0] != '-') topic = FindCommand(argv[i]);
      }
    }
    std::fputs(HelpText(topic).c_str(), verb || help ? stdout : stderr);
    return verb || help ? 0 : sigvisor::cli::kExitSigvisorFailed;
  }
  const sigvisor::cli::Command* command = FindCommand(verb);
  if (command == nullptr) {
    return sigvisor::cli::ReportError(std::string("unknown command '") + verb +
                                      "' (try `sigvisor help`)");
  }
  if (help) {
    std::fputs(HelpText(command).c_str(), stdout);
    return 0;
  }

  if (std::string error = CheckFlags(argc, argv, verb); !error.empty()) {
    return sigvisor::cli::ReportError(error);
  }
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  sigvisor::cli::CollectRepeatedFlags(argc, argv);  // --module, once per occurrence
  if (std::string unused = sigvisor::cli::FlagsNotFor(*command); !unused.empty()) {
    return sigvisor::cli::ReportError(unused);
  }
  // positional[0] is the program, then the verb, then its arguments.
  std::vector<char*> args;
  bool verb_seen = false;
  for (size_t i = 1; i < positional.size(); ++i) {
    if (!verb_seen && std::strcmp(positional[i], verb) == 0) {
      verb_seen = true;
      continue;
    }
    args.push_back(positional[i]);
  }
  return command->run(args);
}
