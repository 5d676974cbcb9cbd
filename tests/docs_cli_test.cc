// The documentation names only flags sigvisor has: every `--flag` in a `sigvisor ...`
// command of README.md, docs/inject.md and docs/mips-platform.md (in backquotes or
// in a code block), and every flag quoted on its own, is one `sigvisor help` lists
// (or one of the few the documents name for other tools).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_test_support.h"

namespace {

using ::sigvisor::testing::Sigvisor;

// "--no-sandbox" and "--no_sandbox" alike, as the command line takes them.
std::string Normalised(std::string flag) {
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

// Every flag `sigvisor help COMMAND` lists, over every command `sigvisor help` lists.
std::set<std::string> SigvisorFlags() {
  std::set<std::string> flags = {"--help", "--version"};
  const std::string overview = Sigvisor("help").out;
  std::smatch command;
  for (auto it = overview.cbegin();
       std::regex_search(it, overview.cend(), command, std::regex("\n  ([a-z]+) +")); it = command[0].second) {
    const std::string help = Sigvisor("help " + command[1].str()).out;
    std::smatch flag;
    for (auto at = help.cbegin(); std::regex_search(at, help.cend(), flag, std::regex("\n  (--?[a-z_]+) "));
         at = flag[0].second) {
      flags.insert(Normalised(flag[1].str()));
    }
  }
  return flags;
}

// Flags the documents name for other tools: tests/hwkvm/lane.sh, tests/mips_qemu_test.sh
// and Bazel.
const std::set<std::string> kOtherToolsFlags = {"--sigvisor", "--keep", "--smp", "--config",
                                                "--copt"};

TEST(DocsCliTest, EveryFlagTheDocumentsNameExists) {
  const std::set<std::string> flags = SigvisorFlags();
  ASSERT_TRUE(flags.count("--memory") && flags.count("--workload") && flags.count("-o"))
      << "the flags were not found in `sigvisor help`";
  const std::regex flag_in_command("(^|\\s)(--[a-z][a-z0-9_-]*)");
  for (const char* document : {"README.md", "docs/inject.md", "docs/mips-platform.md"}) {
    std::ifstream file(document);
    ASSERT_TRUE(file.good()) << document;
    std::stringstream text;
    text << file.rdbuf();
    const std::string all = text.str();
    // `...` spans, and the lines of code blocks.
    std::vector<std::string> spans;
    std::smatch quoted;
    for (auto it = all.cbegin(); std::regex_search(it, all.cend(), quoted, std::regex("`([^`\n]+)`"));
         it = quoted[0].second) {
      spans.push_back(quoted[1]);
    }
    std::istringstream lines(all);
    for (std::string line; std::getline(lines, line);) spans.push_back(line);
    for (std::string span : spans) {
      span = std::regex_replace(span, std::regex("^\\s*\\$?\\s*"), "");
      const bool command = span.rfind("sigvisor ", 0) == 0;
      const bool lone_flag = std::regex_match(span, std::regex("--[a-z][a-z0-9_-]*([= ].*)?"));
      if (!command && !lone_flag) continue;
      std::smatch m;
      for (auto it = span.cbegin(); std::regex_search(it, span.cend(), m, flag_in_command);
           it = m[0].second) {
        const std::string flag = Normalised(m[2].str());
        if (lone_flag && kOtherToolsFlags.count(flag)) break;
        EXPECT_TRUE(flags.count(flag)) << document << ": " << flag << " in `" << span
                                       << "` is not a flag of sigvisor";
        if (lone_flag) break;  // its value may look like a flag of another tool
      }
    }
  }
}

}  // namespace
