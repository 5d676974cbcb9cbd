// `sigvisor run --arch mips`: the same text and JSON report as a KVM run, from the
// interpreter, with the interpreter's counters and the cost model; no /dev/kvm needed.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <regex>
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
      "vmm/app/cli/sigvisor run " + args + " >" + base + ".out 2>" + base + ".err </dev/null";
  const int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, Slurp(base + ".out"), Slurp(base + ".err")};
}

constexpr char kSmoke[] = "--arch mips --image arch/mips/vmm/testdata/smoke.elf";

TEST(MipsCliTest, TextReport) {
  Result r = Sigvisor(std::string(kSmoke) + " --cores 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("boot\ndone\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exited with status 0 (host mips-interpreter, 2 cores"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("interpreter stats (whole run):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("syscalls 102"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at 500 MHz (cycles = instructions + 20 per exception + 10 per flushed "
                       "I-cache line + 200 per IPI sent)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("vdso page: the VMM's at physical 0x1f300000 (1 host page behind 2 cores, "
                       "unchanged); 0 fetches from it, 0 writes refused"),
            std::string::npos)
      << r.out;
}

// The issue's "done when": the bundled tramp=vdso kernel on 4 cores returns from every
// lat_sig signal through the VMM's vdso page, one fetch per signal, and the report
// says so per phase and per op, in the JSON and in the text.
TEST(MipsCliTest, TrampVdsoUsesTheVmmsPageOnceASignal) {
  Result r = Sigvisor("--arch mips --variant tramp=vdso --cores 4 --workload lat_sig --ops 30 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& vdso = doc["mips"]["vdso"];
  EXPECT_EQ(vdso["supplied"], true);
  EXPECT_EQ(vdso["address"], "0x1f300000");
  EXPECT_EQ(vdso["bytes"], 4096);
  EXPECT_EQ(vdso["host_pages"], 1);
  EXPECT_EQ(vdso["intact"], true);
  EXPECT_EQ(vdso["fetches"], 30 + 1);  // the phase's signals and the warm-up's
  EXPECT_EQ(vdso["writes"], 0);

  // More warm-up signals each fetch the page too, outside every phase.
  Result warmed = Sigvisor(
      "--arch mips --variant tramp=vdso --cores 4 --workload lat_sig --ops 30 --warmup 4 --json");
  ASSERT_EQ(warmed.status, 0) << warmed.err;
  const nlohmann::json warmed_vdso = nlohmann::json::parse(warmed.out)["mips"]["vdso"];
  EXPECT_EQ(warmed_vdso["fetches"], 30 + 4);
  for (const nlohmann::json& phase : warmed_vdso["phases"]) {
    if (phase["name"] == "sig_hndl") {
      EXPECT_EQ(phase["fetches"], 30) << phase;
    }
  }
  bool found = false;
  for (const nlohmann::json& phase : vdso["phases"]) {
    if (phase["name"] != "sig_hndl") continue;
    found = true;
    EXPECT_EQ(phase["ops"], 30);
    EXPECT_EQ(phase["fetches"], 30);
    EXPECT_EQ(phase["per_op"]["fetches"], 1.0);
    EXPECT_EQ(phase["per_op"]["writes"], 0.0);
  }
  EXPECT_TRUE(found) << vdso.dump();
  for (const nlohmann::json& phase : doc["phases"]) {
    if (phase["name"] == "sig_hndl") {
      EXPECT_EQ(phase["interpreter_stats"]["vdso_fetches"], 30);  // not KVM's: there is none
    }
  }

  r = Sigvisor("--arch mips --variant tramp=vdso --cores 4 --workload lat_sig --ops 30");
  ASSERT_EQ(r.status, 0) << r.err;
  // In the sig_hndl phase's table: 30 in total, 1.00 per op.
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(phase sig_hndl \(30 ops\)[^]*?\n  vdso_fetches +30 +1\.00\n)")))
      << r.out;
  EXPECT_NE(r.out.find("(1 host page behind 4 cores, unchanged); 31 fetches from it, 0 writes "
                       "refused"),
            std::string::npos)
      << r.out;
}

TEST(MipsCliTest, JsonReport) {
  Result r = Sigvisor(std::string(kSmoke) + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["outcome"], "exited");
  EXPECT_TRUE(doc["kvm_stats"].is_null());  // the interpreter's counters are not KVM's
  EXPECT_EQ(doc["interpreter_stats"]["syscalls"], 102);
  EXPECT_EQ(doc["interpreter_stats"]["interrupts"], 1);
  EXPECT_EQ(doc["mips"]["cores"], 1);
  EXPECT_EQ(doc["mips"]["cost_model"]["cycles_per_ipi_sent"], 200);
  EXPECT_EQ(doc["mips"]["modelled_cycles"], doc["interpreter_stats"]["modelled_cycles"]);
  EXPECT_NE(r.err.find("boot\ndone\n"), std::string::npos);  // the console, off stdout
}

TEST(MipsCliTest, BadArguments) {
  // 125: sigvisor failed (`sigvisor help`, "exit status").
  Result r = Sigvisor("--arch mips --image /nonexistent.elf");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("cannot open image '/nonexistent.elf'"), std::string::npos) << r.err;
  r = Sigvisor(std::string(kSmoke) + " --cores 0");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("MIPS cores"), std::string::npos) << r.err;
  r = Sigvisor("--arch sparc");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("--arch=sparc"), std::string::npos) << r.err;
}

}  // namespace
