// docs/json.md lists KVM's exit statistics as the reports take them: one table row
// per statistic of vmm/report/kvm_exits.h, with its meaning word for word, in the
// table's order, and no row for a statistic the table does not have.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "vmm/report/kvm_exits.h"

namespace {

std::string Read(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "missing the runfile " << path;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The rows of the table under the "## KVM's own exits" heading: "| `name` | meaning |".
std::vector<std::pair<std::string, std::string>> DocumentedRows(const std::string& doc) {
  const size_t section = doc.find("\n## KVM's own exits\n");
  EXPECT_NE(section, std::string::npos) << "docs/json.md has no section \"KVM's own exits\"";
  if (section == std::string::npos) return {};
  const size_t end = doc.find("\n## ", section + 1);
  const std::string text = doc.substr(section, end == std::string::npos ? end : end - section);
  std::vector<std::pair<std::string, std::string>> rows;
  const std::regex row("\n\\| `([a-z_0-9]+)` \\| ([^\n]*) \\|(?=\n)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator();
       ++it) {
    rows.emplace_back((*it)[1].str(), (*it)[2].str());
  }
  return rows;
}

TEST(KvmExitsDocsTest, JsonMdListsTheTableWordForWord) {
  std::vector<std::pair<std::string, std::string>> want = {
      {sigvisor::kKvmExitsTotal.name, sigvisor::kKvmExitsTotal.meaning}};
  for (const sigvisor::KvmExitStat& stat : sigvisor::kKvmExitReasons) {
    want.emplace_back(stat.name, stat.meaning);
  }
  EXPECT_EQ(DocumentedRows(Read("docs/json.md")), want);
}

// host-notes.md says what they mean on each host kind, and json.md links there.
TEST(KvmExitsDocsTest, HostNotesExplainThemPerHostKind) {
  const std::string notes = Read("docs/host-notes.md");
  EXPECT_NE(notes.find("\n## KVM's own exits on each host kind\n"), std::string::npos);
  EXPECT_NE(notes.find("sigvisor run --json"), std::string::npos);
  EXPECT_NE(Read("docs/json.md").find("host-notes.md#kvms-own-exits-on-each-host-kind"),
            std::string::npos);
}

}  // namespace
