#include "vmm/cli/repeated_flag.h"

#include "absl/flags/flag.h"
#include "vmm/cli/flags.h"

namespace sigvisor::cli {

std::vector<std::string> RepeatedFlagValues(int argc, char** argv, std::string_view name) {
  std::vector<std::string> values;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') continue;
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    if (arg == name) {
      if (i + 1 < argc) values.emplace_back(argv[++i]);
    } else if (arg.size() > name.size() && arg.substr(0, name.size()) == name &&
               arg[name.size()] == '=') {
      values.emplace_back(arg.substr(name.size() + 1));
    }
  }
  return values;
}

void CollectRepeatedFlags(int argc, char** argv) {
  std::vector<std::string> modules = RepeatedFlagValues(argc, argv, "module");
  if (!modules.empty()) absl::SetFlag(&FLAGS_module, modules);
  std::vector<std::string> injections = RepeatedFlagValues(argc, argv, "inject");
  if (!injections.empty()) absl::SetFlag(&FLAGS_inject, injections);
}

}  // namespace sigvisor::cli
