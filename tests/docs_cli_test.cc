// The documentation names only what sigvisor has, and links only inside the repository.
// The documents are README.md, docs/README.md (the manual's index) and every page either
// links to; each must be among this test's data, so a page added to the index is checked.
// - Every `--flag` in a `sigvisor ...` command (in backquotes or in a code block), and
//   every flag quoted on its own, is one `sigvisor help` lists (or one of the few the
//   documents name for other tools).
// - Every `sigvisor <command>` names a command `sigvisor help` lists.
// - Every relative link stays inside the repository; a link to a document or into docs/
//   names one that exists, and a #fragment names one of its headings.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
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

// The commands `sigvisor help` lists.
std::set<std::string> SigvisorCommands() {
  std::set<std::string> commands;
  const std::string overview = Sigvisor("help").out;
  std::smatch command;
  for (auto it = overview.cbegin();
       std::regex_search(it, overview.cend(), command, std::regex("\n  ([a-z]+) +")); it = command[0].second) {
    commands.insert(command[1].str());
  }
  return commands;
}

// Every flag `sigvisor help COMMAND` lists, over every command `sigvisor help` lists.
std::set<std::string> SigvisorFlags(const std::set<std::string>& commands) {
  std::set<std::string> flags = {"--help", "--version"};
  for (const std::string& command : commands) {
    const std::string help = Sigvisor("help " + command).out;
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
const std::set<std::string> kOtherToolsFlags = {"--sigvisor", "--keep", "--smp", "--limit",
                                                "--file", "--sh", "--config", "--copt"};

std::string ReadDocument(const std::string& path) {
  std::ifstream file(path);
  if (!file.good()) return {};
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as '-'.
std::string Anchor(const std::string& heading) {
  std::string anchor;
  for (char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') {
      anchor += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (c == ' ') {
      anchor += '-';
    }
  }
  return anchor;
}

std::set<std::string> Anchors(const std::string& text) {
  std::set<std::string> anchors;
  std::istringstream lines(text);
  bool in_code = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    std::smatch heading;
    if (!in_code && std::regex_match(line, heading, std::regex("#+ +(.*)"))) {
      anchors.insert(Anchor(heading[1]));
    }
  }
  return anchors;
}

// A path relative to the repository's root, or "" when it leaves the repository.
std::string Resolve(const std::filesystem::path& document, const std::string& target) {
  std::filesystem::path path = (document.parent_path() / target).lexically_normal();
  std::string resolved = path.generic_string();
  if (resolved.empty() || resolved == ".") return ".";
  if (resolved.rfind("..", 0) == 0 || path.is_absolute()) return "";
  return resolved;
}

struct Link {
  std::string document;
  std::string target;
};

// README.md, docs/README.md and every document they link to, with each document's links.
std::map<std::string, std::string> Documents(std::vector<Link>& links) {
  std::map<std::string, std::string> documents;
  std::vector<std::string> queue = {"README.md", "docs/README.md"};
  while (!queue.empty()) {
    const std::string name = queue.back();
    queue.pop_back();
    if (documents.count(name)) continue;
    const std::string text = ReadDocument(name);
    EXPECT_FALSE(text.empty()) << name << " is linked from the documentation but is not among "
                                          "docs_cli_test's data (tests/BUILD.bazel)";
    documents[name] = text;
    std::smatch link;
    for (auto it = text.cbegin(); std::regex_search(it, text.cend(), link, std::regex("\\]\\(([^)\\s]+)\\)"));
         it = link[0].second) {
      const std::string target = link[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      links.push_back({name, target});
      const std::string path = Resolve(name, target.substr(0, target.find('#')));
      const bool markdown = path.size() > 3 && path.compare(path.size() - 3, 3, ".md") == 0;
      if (markdown && (path == "README.md" || path.rfind("docs/", 0) == 0)) queue.push_back(path);
    }
  }
  return documents;
}

TEST(DocsCliTest, TheIndexReachesEveryPage) {
  std::vector<Link> links;
  const std::map<std::string, std::string> documents = Documents(links);
  for (const char* page : {"docs/cli.md", "docs/json.md", "docs/traps.md", "docs/testing.md",
                           "docs/inject.md", "docs/mips-platform.md", "docs/seeds.md",
                           "docs/host-notes.md"}) {
    EXPECT_TRUE(documents.count(page)) << page << " is not linked from README.md or docs/README.md";
  }
}

TEST(DocsCliTest, LinksStayInsideTheRepository) {
  std::vector<Link> links;
  const std::map<std::string, std::string> documents = Documents(links);
  for (const Link& link : links) {
    const std::string path_part = link.target.substr(0, link.target.find('#'));
    const std::string fragment =
        link.target.find('#') == std::string::npos ? "" : link.target.substr(link.target.find('#') + 1);
    const std::string path = path_part.empty() ? link.document : Resolve(link.document, path_part);
    EXPECT_FALSE(path.empty()) << link.document << ": the link " << link.target
                               << " leads outside the repository";
    if (path.empty()) continue;
    if (path == "README.md" || path.rfind("docs", 0) == 0) {
      EXPECT_TRUE(std::filesystem::exists(path))
          << link.document << ": the link " << link.target << " names no file";
    }
    if (!fragment.empty() && documents.count(path)) {
      EXPECT_TRUE(Anchors(documents.at(path)).count(fragment))
          << link.document << ": the link " << link.target << " names no heading of " << path;
    }
  }
  // Nor does any text name a path outside it.
  for (const auto& [name, text] : documents) {
    for (const char* outside : {"../shared", "/work/shared", "shared/seeds", "shared/platform"}) {
      EXPECT_EQ(text.find(outside), std::string::npos)
          << name << " names " << outside << ": restate what is needed in docs/ instead";
    }
  }
}

TEST(DocsCliTest, EveryFlagAndCommandTheDocumentsNameExists) {
  const std::set<std::string> commands = SigvisorCommands();
  const std::set<std::string> flags = SigvisorFlags(commands);
  ASSERT_TRUE(commands.count("run") && commands.count("study"))
      << "the commands were not found in `sigvisor help`";
  ASSERT_TRUE(flags.count("--memory") && flags.count("--workload") && flags.count("-o"))
      << "the flags were not found in `sigvisor help`";
  std::vector<Link> links;
  const std::map<std::string, std::string> documents = Documents(links);
  const std::regex flag_in_command("(^|\\s)(--[a-z][a-z0-9_-]*)");
  for (const auto& [document, all] : documents) {
    // `...` spans and the lines of code blocks, which may be commands; and every line,
    // for flags in prose.
    std::vector<std::pair<std::string, bool>> spans;  // (text, code)
    std::smatch quoted;
    for (auto it = all.cbegin(); std::regex_search(it, all.cend(), quoted, std::regex("`([^`\n]+)`"));
         it = quoted[0].second) {
      spans.emplace_back(quoted[1], true);
    }
    std::istringstream lines(all);
    bool in_code = false;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("```", 0) == 0) in_code = !in_code;
      spans.emplace_back(line, in_code || line.rfind("    ", 0) == 0);
    }
    for (auto [span, code] : spans) {
      span = std::regex_replace(span, std::regex("^\\s*\\$?\\s*"), "");
      const bool command = span.rfind("sigvisor ", 0) == 0;
      const bool lone_flag = std::regex_match(span, std::regex("--[a-z][a-z0-9_-]*([= ].*)?"));
      if (!command && !lone_flag) continue;
      std::smatch verb;
      // "sigvisor run ...", but not output such as "sigvisor guest: ..."
      if (command && code && std::regex_match(span, verb, std::regex("sigvisor ([a-z]+)(\\s.*)?"))) {
        EXPECT_TRUE(commands.count(verb[1].str()))
            << document << ": `" << verb[1] << "` in `" << span << "` is not a command of sigvisor";
      }
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
