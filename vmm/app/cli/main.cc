// sigvisor: the command-line entry point. `sigvisor <command> [flags]`.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "vmm/app/cli/build_info/build_info.h"
#include "vmm/app/cli/command.h"
#include "vmm/app/cli/exit_status.h"
#include "vmm/app/cli/result_output.h"

namespace {

bool IsHelpFlag(std::string_view arg) {
  return arg == "--help" || arg == "-h" || arg == "-help" || arg == "--helpfull";
}

// The command line's work; `what` receives what stdout carries, for the error if
// writing it fails (main checks that, once, for every command).
int Dispatch(int argc, char** argv, std::string* what) {
  using sigvisor::cli::FindCommand;
  using sigvisor::cli::HelpText;

  // The verb is the first argument that is not a flag; help is handled here so that
  // it shows only the flags the verb reads. The command parses the rest itself.
  const char* verb = nullptr;
  int verb_at = 0;
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") break;
    if (std::string_view(argv[i]) == "--version") {  // with any command: it runs nothing
      *what = "the version line";
      std::printf("%s\n", sigvisor::cli::VersionLine().c_str());
      return 0;
    }
  }
  for (int i = 1; i < argc; ++i) {
    if (IsHelpFlag(argv[i])) help = true;
    else if (!verb && argv[i][0] != '-') verb = argv[(verb_at = i)];
  }
  *what = !help && verb != nullptr && std::strcmp(verb, "help") != 0
              ? std::string("the output of `sigvisor ") + verb + "`"
              : std::string("the help");
  if (verb == nullptr || std::strcmp(verb, "help") == 0) {
    const sigvisor::cli::Command* topic = nullptr;
    if (verb != nullptr) {
      for (int i = 1; i < argc; ++i) {
        if (argv[i] == verb || argv[i][0] == '-') continue;
        topic = FindCommand(argv[i]);
        if (topic == nullptr && std::strcmp(argv[i], "help") != 0) {
          return sigvisor::cli::ReportError(std::string("unknown command '") + argv[i] +
                                            "' (try `sigvisor help`)");
        }
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

  // The words around the verb, in order, without it.
  std::vector<char*> words(argv + 1, argv + argc);
  words.erase(words.begin() + (verb_at - 1));
  return command->run(*command, words);
}

}  // namespace

int main(int argc, char** argv) {
  // Every command's result on stdout, flushed and closed here and checked: a write
  // that failed (a full disk) is an error and status 125, never a silent 0.
  sigvisor::cli::WatchStdout();
  std::string what = "the output";
  const int status = Dispatch(argc, argv, &what);
  return sigvisor::cli::FinishStdout(what, status);
}
