// The documentation names only what sigvisor has, and links only inside the repository.
// The documents are README.md, docs/README.md (the manual's index) and every page either
// links to; each must be among this test's data, so a page added to the index is checked.
// - Every `--flag` in a `sigvisor ...` command (in backquotes or in a code block), and
//   every flag quoted on its own, is one `sigvisor help` lists (or one of the few the
//   documents name for other tools).
// - Every `sigvisor <command>` names a command `sigvisor help` lists.
// - Every relative link stays inside the repository; a link to a document or into docs/
//   names one that exists, and a #fragment names one of its headings.
// - Every `sigvisor ...` command in a ```sh block (and `bazel run //:sigvisor -- ...`)
//   runs and exits with the status the document implies: 0, unless its comment (on its
//   line, or the comment lines right above it) says "status N". Those that need no KVM
//   (help, images, image, sites, --arch mips, refusals) run everywhere, the others where
//   /dev/kvm is usable; those that cannot run anywhere (a placeholder, a file of the
//   reader's, QEMU, Slurm, a Linux boot of minutes) are listed with the reason, and
//   every `at=` an `addr=access` injection names is one of `sigvisor sites --uaccess`.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "tests/host_lane.h"

namespace {

using ::sigvisor::testing::HaveKvm;
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
                                                "--silence",  "--file", "--sh",  "--tcg",
                                                "--config",   "--copt"};

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

// ---- The documents' shell examples, run ----------------------------------------------

// One `sigvisor` command of a ```sh block.
struct Example {
  std::string where;    // "docs/cli.md:129"
  std::string args;     // what follows `sigvisor`, as the shell reads it
  std::string comment;  // its own comment and the comment lines right above it
  int expected = 0;     // the status the document implies
  std::string not_run;  // why it cannot run anywhere ("" when it can)
  bool needs_kvm = true;
};

// `text` up to an unquoted " #" (a shell comment), and the comment.
std::pair<std::string, std::string> SplitComment(const std::string& text) {
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1])))) {
      return {text.substr(0, i), text.substr(i + 1)};
    }
  }
  return {text, ""};
}

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

// The commands of the ```sh blocks, joined across trailing backslashes; each `a && b`
// part that runs sigvisor (`sigvisor ARGS`, `bazel run //:sigvisor -- ARGS`) is one.
std::vector<Example> ShellExamples(const std::map<std::string, std::string>& documents) {
  std::vector<Example> examples;
  for (const auto& [document, text] : documents) {
    std::istringstream lines(text);
    bool in_sh = false, in_block = false;
    std::string comments;  // the comment lines just above the next command
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
      ++number;
      if (line.rfind("```", 0) == 0) {
        in_sh = !in_block && Trim(line.substr(3)) == "sh";
        in_block = !in_block;
        comments.clear();
        continue;
      }
      if (!in_sh) continue;
      const int first = number;
      while (!line.empty() && line.back() == '\\') {
        std::string more;
        if (!std::getline(lines, more)) break;
        ++number;
        line = line.substr(0, line.size() - 1) + " " + Trim(more);
      }
      const std::string trimmed = Trim(line);
      if (trimmed.empty()) {
        comments.clear();
        continue;
      }
      if (trimmed[0] == '#') {
        comments += trimmed + "\n";
        continue;
      }
      const auto [command, comment] = SplitComment(trimmed);
      for (size_t begin = 0; begin <= command.size();) {
        size_t end = command.find("&&", begin);
        if (end == std::string::npos) end = command.size();
        const std::string part = Trim(command.substr(begin, end - begin));
        begin = end + 2;
        std::string args;
        if (part.rfind("sigvisor ", 0) == 0 || part == "sigvisor") {
          args = part.substr(std::string("sigvisor").size());
        } else if (part.rfind("bazel run //:sigvisor", 0) == 0) {
          args = part.substr(std::string("bazel run //:sigvisor").size());
          args = Trim(args).rfind("--", 0) == 0 ? Trim(args).substr(2) : args;
        } else {
          continue;  // another tool: tools/setup.sh, bazel test, qemu-system-x86_64
        }
        Example example;
        example.where = document + ":" + std::to_string(first);
        example.args = Trim(args);
        example.comment = comments + comment;
        std::smatch status;
        if (std::regex_search(example.comment, status, std::regex("status ([0-9]+)"))) {
          example.expected = std::stoi(status[1]);
        }
        examples.push_back(example);
      }
      comments.clear();
    }
  }
  return examples;
}

// What the test cannot run anywhere, and why: each reason names the test that covers it
// where one does.
const std::vector<std::pair<std::string, std::string>> kCannotRun = {
    {"--peer",
     "runs QEMU beside sigvisor for many runs; tests:bench_peer_test runs a bench "
     "with peers"},
    {"--shard auto", "needs a Slurm job array; tests:slurm_bench_test runs one"},
    {"/boot/vmlinuz",
     "boots Debian's Linux kernel, 7-13 minutes where CPL0 is emulated; "
     "tests:linux_guest_test boots it"},
    {"--gdb", "waits for a debugger; tests:gdb_test attaches one"},
    {"/tmp/linux.snap",
     "restores a snapshot of Debian's Linux kernel, which only hardware KVM saves; "
     "tests:linux_snapshot_test takes and restores one"},
};

// Why `args` cannot run anywhere, or "" (it runs where its KVM needs are met).
std::string WhyNotRun(const std::string& args, const std::filesystem::path& cwd) {
  for (const auto& [fragment, why] : kCannotRun) {
    if (args.find(fragment) != std::string::npos) return why;
  }
  std::smatch m;
  if (std::regex_search(args, m,
                        std::regex("\\$\\{?[A-Za-z_]+\\}?|<[A-Za-z][^>]*>|\\[--[^\\]]*\\]|"
                                   "(^|[\\s=])[A-Z][A-Z_]{2,}($|[\\s,])"))) {
    return "a placeholder (" + Trim(m[0].str()) + ") for the reader to fill in";
  }
  // A file the reader has (a kernel, an initramfs, a module): not in this test's
  // directory. The bundled kernel is `--image kernel`.
  for (auto it = args.cbegin();
       std::regex_search(it, args.cend(), m, std::regex("--(image|initrd|module)[ =]([^ =]+)"));
       it = m[0].second) {
    const std::string file = m[2];
    if (m[1] == "image" && file == "kernel") continue;
    if (!std::filesystem::exists(cwd / file)) return "names a file of the reader's (" + file + ")";
  }
  return "";
}

// Whether `args` needs /dev/kvm: every guest run but the MIPS interpreter's; not help,
// images, image, sites, study tramp, nor a refusal (refused before /dev/kvm is opened).
bool NeedsKvm(const std::string& args, int expected) {
  std::istringstream words(args);
  std::string verb;
  words >> verb;
  if (verb.empty() || verb == "help" || verb == "images" || verb == "image" || verb == "sites" ||
      verb == "--help" || verb == "--version") {
    return false;
  }
  if (std::regex_search(args, std::regex("--arch[ =]mips"))) return false;
  if (verb == "study" && args.find("tramp") != std::string::npos) return false;
  return expected != ::sigvisor::testing::kSigvisorFailed;
}

std::filesystem::path ExampleDirectory() {
  const std::filesystem::path dir = ::sigvisor::testing::TempPath("examples");
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<Example> Examples() {
  std::vector<Link> links;
  std::vector<Example> examples = ShellExamples(Documents(links));
  const std::filesystem::path cwd = ExampleDirectory();
  for (Example& example : examples) {
    example.not_run = WhyNotRun(example.args, cwd);
    example.needs_kvm = NeedsKvm(example.args, example.expected);
  }
  return examples;
}

// Runs one example in the examples' directory (where `image -o` writes its file);
// bounded by timeout(1).
void RunExample(const Example& example) {
  const std::string binary = std::filesystem::absolute("vmm/app/cli/sigvisor").string();
  const std::filesystem::path cwd = ExampleDirectory();
  const std::string out = (cwd / "example.stdout").string(),
                    err = (cwd / "example.stderr").string();
  const std::string command = "cd '" + cwd.string() + "' && timeout 600 " + binary + " " +
                              example.args + " >'" + out + "' 2>'" + err + "' </dev/null";
  const int raw = std::system(command.c_str());
  const int status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::cout << "ran " << example.where << ": sigvisor " << example.args << " -> " << status << "\n";
  const std::string stderr_text = ::sigvisor::testing::Slurp(err);
  EXPECT_EQ(status, example.expected)
      << example.where << ": `sigvisor " << example.args << "` exited " << status
      << ", the document implies " << example.expected
      << " (give another in its comment: \"status N\")\n"
      << stderr_text.substr(stderr_text.size() > 2000 ? stderr_text.size() - 2000 : 0);
}

TEST(DocsCliTest, TheShellExamplesAreFoundAndWhatCannotRunIsListed) {
  const std::vector<Example> examples = Examples();
  int runnable_without_kvm = 0;
  bool mips = false, refusal = false;
  for (const Example& example : examples) {
    if (!example.not_run.empty()) {
      std::cout << "cannot run " << example.where << ": sigvisor " << example.args << "\n    "
                << example.not_run << "\n";
      continue;
    }
    if (!example.needs_kvm) ++runnable_without_kvm;
    mips = mips || example.args.find("--arch mips") != std::string::npos;
    refusal = refusal || example.expected == ::sigvisor::testing::kSigvisorFailed;
  }
  // What docs/cli.md shows at least: help, images, a refusal, a MIPS run.
  EXPECT_GE(runnable_without_kvm, 5) << "the sh examples were not found";
  EXPECT_TRUE(mips && refusal);
}

TEST(DocsCliTest, TheShellExamplesThatNeedNoKvmRun) {
  for (const Example& example : Examples()) {
    if (example.not_run.empty() && !example.needs_kvm) RunExample(example);
  }
}

TEST(DocsCliTest, TheShellExamplesThatNeedKvmRun) {
  std::vector<Example> kvm;
  for (const Example& example : Examples()) {
    if (example.not_run.empty() && example.needs_kvm) kvm.push_back(example);
  }
  ASSERT_FALSE(kvm.empty()) << "no sh example boots a guest under KVM: the extraction broke";
  if (!HaveKvm()) {
    std::string skipped;
    for (const Example& example : kvm)
      skipped += "\n  " + example.where + ": sigvisor " + example.args;
    GTEST_SKIP() << "/dev/kvm not usable: " << kvm.size() << " examples not run:" << skipped;
  }
  // Fault injection strikes at a hardware breakpoint (op=, at=, random), which the
  // hardware lane's nested guest never takes: those examples run on the PVM host only.
  const std::optional<std::string> lane_lacks =
      ::sigvisor::testing::LaneLacks(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  for (const Example& example : kvm) {
    if (lane_lacks && example.args.find("--inject") != std::string::npos) {
      std::cout << "not run here: " << example.where << ": " << *lane_lacks << "\n";
      continue;
    }
    RunExample(example);
  }
}

// An injection at a user access (`page=...,addr=access,at=X`) names an instruction the
// kernel's exception table lists: X, an address or SYMBOL+OFFSET, is one of `sigvisor
// sites --uaccess` of the example's build. (A hard-coded 0x1008c7 moved with the kernel
// and made docs/cli.md's example report no_effect.) No KVM needed.
TEST(DocsCliTest, EveryUserAccessAnExampleInjectsAtIsOne) {
  int checked = 0;
  for (const Example& example : Examples()) {
    std::smatch at;
    if (example.args.find("addr=access") == std::string::npos ||
        !std::regex_search(
            example.args, at,
            std::regex("addr=access[^ ]*,at=([^, ]+)|at=([^, ]+)[^ ]*addr=access"))) {
      continue;
    }
    const std::string site = at[1].matched ? at[1].str() : at[2].str();
    std::smatch variant;
    std::string sites_args = "sites --uaccess --json";
    if (std::regex_search(example.args, variant, std::regex("--variant[ =]([^ ]+)"))) {
      sites_args += " --variant " + variant[1].str();
    }
    const ::sigvisor::testing::CommandResult sites = Sigvisor(sites_args);
    ASSERT_EQ(sites.status, 0) << sites.err;
    const nlohmann::json doc = nlohmann::json::parse(sites.out);
    bool listed = false;
    for (const nlohmann::json& s : doc["sites"]) {
      listed = listed || s["address"] == site || s["symbol"] == site;
    }
    EXPECT_TRUE(listed) << example.where << ": at=" << site
                        << " is not a user access of the kernel (`sigvisor " << sites_args
                        << "`): name one it lists, by symbol+offset";
    ++checked;
  }
  EXPECT_GE(checked, 1) << "docs/cli.md's page=np,addr=access example was not found";
}

}  // namespace
