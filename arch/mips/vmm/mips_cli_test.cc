// `sigvisor run --arch mips`: the same text and JSON report as a KVM run, from the
// interpreter, with the interpreter's counters and the cost model; no /dev/kvm needed.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace {

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Result Sigvisor(const std::string& args) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string base = std::string(dir ? dir : "/tmp") + "/mips_cli";
  const std::string command =
      "vmm/cli/sigvisor run " + args + " >" + base + ".out 2>" + base + ".err </dev/null";
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, Slurp(base + ".out"), Slurp(base + ".err")};
}

constexpr char kSmoke[] = "--arch mips --image arch/mips/vmm/testdata/smoke.elf";

TEST(MipsCliTest, TextReport) {
  Result r = Sigvisor(std::string(kSmoke) + " --cores 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("boot\ndone\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exited with status 0 (host mips interpreter, 2 cores"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("interpreter stats (whole run):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("syscalls 102"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at 500 MHz (cycles = instructions + 20 per exception + 10 per flushed "
                       "I-cache line + 200 per IPI sent)"),
            std::string::npos)
      << r.out;
}

TEST(MipsCliTest, JsonReport) {
  Result r = Sigvisor(std::string(kSmoke) + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["outcome"], "exited");
  EXPECT_EQ(doc["kvm_stats"]["syscalls"], 102);
  EXPECT_EQ(doc["kvm_stats"]["interrupts"], 1);
  EXPECT_EQ(doc["mips"]["cores"], 1);
  EXPECT_EQ(doc["mips"]["cost_model"]["cycles_per_ipi_sent"], 200);
  EXPECT_EQ(doc["mips"]["modelled_cycles"], doc["kvm_stats"]["modelled_cycles"]);
  EXPECT_NE(r.err.find("boot\ndone\n"), std::string::npos);  // the console, off stdout
}

TEST(MipsCliTest, BadArguments) {
  Result r = Sigvisor("--arch mips --image /nonexistent.elf");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot open image '/nonexistent.elf'"), std::string::npos) << r.err;
  r = Sigvisor(std::string(kSmoke) + " --cores 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("MIPS cores"), std::string::npos) << r.err;
  r = Sigvisor("--arch sparc");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--arch=sparc"), std::string::npos) << r.err;
}

}  // namespace
