// `sigvisor bench`, `merge` and `study` end to end: the JSON validates against its
// documented schema, shards merge to the counts of one full run, the SVG is
// well-formed and names every variant, an interrupted bench keeps what it measured,
// and bad input gets one line and status 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "vmm/report/testing/json_schema.h"
#include "vmm/report/testing/xml_check.h"

namespace {

using nlohmann::json;
using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::DocsSchema;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Lines;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::Slurp;
using ::sigvisor::testing::TempPath;

void ExpectValid(const json& doc, const std::string& schema) {
  const std::vector<std::string> errors = sigvisor::testing::ValidateJson(doc, DocsSchema(schema));
  EXPECT_TRUE(errors.empty()) << errors.size() << " errors, the first: " << errors.front();
}

// Per-op counts of every cell, keyed by workload/phase/variant/trap.
std::map<std::string, std::string> Counts(const json& doc) {
  std::map<std::string, std::string> out;
  for (const json& cell : doc["cells"]) {
    out[cell["workload"].get<std::string>() + "/" + cell["phase"].get<std::string>() + "/" +
        cell["variant"].get<std::string>() + "/" + cell["trap"].get<std::string>()] =
        cell["samples"].dump() + " " + cell["per_op"].dump();
  }
  return out;
}

const json* Cell(const json& doc, const std::string& phase, const std::string& variant,
                 const std::string& trap) {
  for (const json& cell : doc["cells"]) {
    if (cell["phase"] == phase && cell["variant"] == variant && cell["trap"] == trap) return &cell;
  }
  return nullptr;
}

constexpr char kMatrix[] =
    "--workloads divzero,pipe_rw --variants 'baseline;dr7=lazy' --traps off,auto --ops 3 "
    "--repetitions 2";

TEST(BenchCliTest, JsonValidatesAndCountsAreExact) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor(std::string("bench --json ") + kMatrix);
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = json::parse(r.out);
  ExpectValid(doc, "sigvisor.bench-1.schema.json");
  EXPECT_TRUE(doc["complete"].get<bool>());
  EXPECT_EQ(doc["runs_measured"], 16);
  EXPECT_EQ(doc["matrix"]["traps"], json({"off", "patch"}));  // auto is patch
  for (const json& cell : doc["cells"]) {
    EXPECT_TRUE(cell["counts_agree"].get<bool>()) << cell.dump();
    EXPECT_EQ(cell["samples"], 2) << cell.dump();
  }
  const json* always = Cell(doc, "divzero", "baseline", "patch");
  const json* lazy = Cell(doc, "divzero", "dr7=lazy", "patch");
  ASSERT_TRUE(always && lazy);
  EXPECT_EQ((*always)["per_op"]["traps_by_kind"]["dr_write"], 1.0);
  EXPECT_EQ((*lazy)["per_op"]["traps_by_kind"]["dr_write"], 0.0);
  const json* pipe = Cell(doc, "pipe_rw", "baseline", "patch");
  ASSERT_TRUE(pipe);
  EXPECT_EQ((*pipe)["per_op"]["traps_by_kind"]["segment_load"], 4.0);
  EXPECT_EQ((*Cell(doc, "divzero", "baseline", "off"))["per_op"]["traps"], 0.0);
}

// --traps pv runs each build's debugreg=pv counterpart: the DR7 writes per signal of
// patch, without patch's exits.
TEST(BenchCliTest, PvCountsTheDr7WritesOfPatchWithoutExits) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor(
      "bench --json --workloads divzero --variants 'baseline;dr7=lazy' --traps off,patch,pv "
      "--ops 3 --repetitions 1");
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = json::parse(r.out);
  ExpectValid(doc, "sigvisor.bench-1.schema.json");
  EXPECT_EQ(doc["matrix"]["traps"], json({"off", "patch", "pv"}));
  const json* always = Cell(doc, "divzero", "baseline", "pv");
  const json* lazy = Cell(doc, "divzero", "dr7=lazy", "pv");
  const json* patch = Cell(doc, "divzero", "baseline", "patch");
  ASSERT_TRUE(always && lazy && patch);
  EXPECT_EQ((*always)["per_op"]["traps_by_kind"]["dr_write"], 1.0);
  EXPECT_EQ((*always)["per_op"]["traps_by_kind"]["segment_load"], 0.0);  // swapgs is native
  EXPECT_EQ((*always)["per_op"]["exits"], 0.0);
  EXPECT_EQ((*always)["per_op"]["dr_loads"], 0.0);
  EXPECT_EQ((*lazy)["per_op"]["traps_by_kind"]["dr_write"], 0.0);
  EXPECT_EQ((*patch)["per_op"]["exits"], 5.0);  // 1 DR7 write + 4 swapgs, each an exit
}

TEST(BenchCliTest, ShardsMergeToTheFullRunsCounts) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult full = Sigvisor(std::string("bench --json ") + kMatrix);
  ASSERT_EQ(full.status, 0) << full.err;
  std::string files;
  for (int i = 1; i <= 3; ++i) {
    const std::string path = TempPath("shard" + std::to_string(i) + ".json");
    CommandResult part =
        Sigvisor(std::string("bench --json --shard ") + std::to_string(i) + "/3 " + kMatrix);
    ASSERT_EQ(part.status, 0) << part.err;
    ExpectValid(json::parse(part.out), "sigvisor.bench-1.schema.json");
    std::ofstream(path) << part.out;
    files = path + " " + files;  // merge in any order
  }
  CommandResult merged = Sigvisor("merge --json " + files);
  ASSERT_EQ(merged.status, 0) << merged.err;
  const json doc = json::parse(merged.out);
  ExpectValid(doc, "sigvisor.bench-1.schema.json");
  EXPECT_TRUE(doc["complete"].get<bool>());
  EXPECT_EQ(Counts(doc), Counts(json::parse(full.out)));

  // Two of three shards: merged, but incomplete (status 1).
  CommandResult partial = Sigvisor("merge --json " + TempPath("shard1.json") + " " + TempPath("shard3.json"));
  EXPECT_EQ(partial.status, 1);
  EXPECT_FALSE(json::parse(partial.out)["complete"].get<bool>());
  EXPECT_NE(partial.err.find("INCOMPLETE"), std::string::npos) << partial.err;
  ExpectOneLineError(Sigvisor("merge " + TempPath("shard1.json") + " " + TempPath("shard1.json")),
                     "shard 1/3 is in both");
}

TEST(BenchCliTest, TextCsvAndSvg) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  const std::string svg_path = TempPath("bench.svg");
  CommandResult text = Sigvisor(std::string("bench --svg ") + svg_path + " " + kMatrix);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("complete: 16 of 16 runs measured"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("divzero, phase divzero"), std::string::npos) << text.out;
  const sigvisor::testing::XmlCheck svg = sigvisor::testing::CheckXml(Slurp(svg_path));
  ASSERT_TRUE(svg.ok) << svg.error;
  EXPECT_EQ(svg.root, "svg");
  for (const char* name : {"baseline", "dr7=lazy", "trap off", "trap patch", "pipe_rw, phase pipe_rw"}) {
    EXPECT_NE(svg.text.find(name), std::string::npos) << name;
  }
  CommandResult csv = Sigvisor(std::string("bench --csv ") + kMatrix);
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("workload,phase,variant,settings,trap,", 0), 0u) << csv.out;
  EXPECT_EQ(Lines(csv.out), 1 + 8);  // 2 workloads x 2 variants x 2 traps
}

TEST(BenchCliTest, AnInterruptedBenchReportsWhatCompleted) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  const std::string out = TempPath("interrupted.json"), err = TempPath("interrupted.err");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    execl("vmm/app/cli/sigvisor", "sigvisor", "bench", "--json", "--workloads", "pipe_rw", "--ops", "3",
          "--repetitions", "100000", nullptr);
    _exit(127);
  }
  // The first progress line comes after a run has finished (and 2 s have passed).
  for (int i = 0; i < 600 && Slurp(err).find("bench [") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(Slurp(err).find("bench ["), std::string::npos) << Slurp(err);
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const json doc = json::parse(Slurp(out));
  ExpectValid(doc, "sigvisor.bench-1.schema.json");
  EXPECT_TRUE(doc["interrupted"].get<bool>());
  EXPECT_FALSE(doc["complete"].get<bool>());
  EXPECT_GT(doc["runs_measured"].get<int>(), 0);
  EXPECT_LT(doc["runs_measured"].get<int>(), doc["runs_expected"].get<int>());
  EXPECT_FALSE(doc["cells"].empty());
}

TEST(StudyCliTest, CerrJsonValidatesAndGoesTheSeedsWay) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  const std::string svg_path = TempPath("study.svg");
  CommandResult r = Sigvisor("study cerr --ops 3 --repetitions 2 --json --svg " + svg_path);
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = json::parse(r.out);
  ExpectValid(doc, "sigvisor.study-1.schema.json");
  ExpectValid(doc["studies"][0]["bench"], "sigvisor.bench-1.schema.json");
  bool found = false;
  // The seed's figure in VM terms is kernel instructions, counted where the host
  // emulates CPL0; where it runs CPL0 directly there is no such comparison.
  const bool counted = doc["host"]["cpl0_emulated"].get<bool>();
  for (const json& c : doc["studies"][0]["comparisons"]) {
    if (c["metric"] == "kernel_insns_per_op" && c["phase"] == "sig_hndl") {
      found = true;
      EXPECT_LT(c["new"].get<double>(), c["old"].get<double>());
      EXPECT_EQ(c["agrees"], true);
      std::printf("sig_hndl kernel instructions per signal: err_or %g, cerr %g\n",
                  c["old"].get<double>(), c["new"].get<double>());
    }
  }
  EXPECT_EQ(found, counted);
  const sigvisor::testing::XmlCheck svg = sigvisor::testing::CheckXml(Slurp(svg_path));
  ASSERT_TRUE(svg.ok) << svg.error;
  EXPECT_NE(svg.text.find("uaccess=cerr"), std::string::npos);
}

TEST(StudyCliTest, TextNamesTheSeedsTable) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("study dr7 --ops 3 --repetitions 2");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* text : {"== study dr7 (seed 000)", "With unconditional write (baseline):",
                           "With unlikely write (dr7=lazy):", "DR write traps", "against the seed"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
}

TEST(BenchCliTest, BadInputIsOneLineAndStatusTwo) {
  ExpectOneLineError(Sigvisor("bench --shard 0/2"), "--shard '0/2'");
  ExpectOneLineError(Sigvisor("bench --shard 3/2"), "--shard '3/2'");
  ExpectOneLineError(Sigvisor("bench --workloads divzero,nope"), "'nope' is not a workload");
  ExpectOneLineError(Sigvisor("bench --variants 'baseline;dr7=sometimes'"), "dr7 takes always or lazy");
  ExpectOneLineError(Sigvisor("bench --variants 'dr7=lazy,pda=direct'"), "is not built");
  ExpectOneLineError(Sigvisor("bench --variants 'baseline;dr7=always'"), "listed already");
  ExpectOneLineError(Sigvisor("bench --traps off,sometimes"), "'sometimes' is not a trap mechanism");
  if (HaveKvm()) {  // refused once the matrix is known: pda=direct has no pv build
    ExpectOneLineError(Sigvisor("bench --traps pv --variants pda=direct"), "has none");
  }
  ExpectOneLineError(Sigvisor("bench --ops 0"), "--ops '0'");
  ExpectOneLineError(Sigvisor("bench --repetitions many"), "--repetitions 'many'");
  ExpectOneLineError(Sigvisor("bench --json --csv"), "give one");
  ExpectOneLineError(Sigvisor("bench --svg /nonexistent/dir/b.svg"), "--svg '/nonexistent/dir/b.svg'");
  ExpectOneLineError(Sigvisor("bench extra"), "no argument 'extra'");
  ExpectOneLineError(Sigvisor("bench --image kernel.elf"), "--image does not apply");
  ExpectOneLineError(Sigvisor("study"), "needs a study");
  ExpectOneLineError(Sigvisor("study nope"), "no study 'nope'");
  ExpectOneLineError(Sigvisor("study all dr7"), "takes no other study");
  ExpectOneLineError(Sigvisor("study dr7 --shard 1/2"), "--shard does not apply");
  ExpectOneLineError(Sigvisor("merge"), "needs the JSON files");
  ExpectOneLineError(Sigvisor("merge /nonexistent.json"), "cannot open '/nonexistent.json'");
  const std::string not_json = TempPath("not.json");
  std::ofstream(not_json) << "hello\n";
  ExpectOneLineError(Sigvisor("merge " + not_json), "is not JSON");
  const std::string run_json = TempPath("run.json");
  std::ofstream(run_json) << R"({"schema": "sigvisor.run/1"})";
  ExpectOneLineError(Sigvisor("merge " + run_json), "is not a bench result");
}

// What a Linux build cannot take is the Linux board's to say (x86::LinuxBoard); bench
// asks it before the kernel is loaded and refuses in its own flags' words. --inject is
// refused before KVM is opened, so this file need not be a kernel.
TEST(BenchCliTest, ALinuxBuildIsRefusedWhatItsBoardRefuses) {
  const std::string kernel = TempPath("vmlinuz-not-really");
  std::ofstream(kernel) << "not a kernel\n";
  ExpectOneLineError(
      Sigvisor("bench --variants 'baseline; linux=" + kernel + "' --inject sig=usr1,op=1"),
      "--inject aims at the bundled kernel's code; a Linux build cannot take it");
  if (HaveKvm()) {  // refused once the host has resolved --traps, before the kernel loads
    ExpectOneLineError(
        Sigvisor("bench --variants 'linux=" + kernel + "' --traps off,auto"),
        "--variants: linux:vmlinuz-not-really runs with --traps off only (the trap mechanisms "
        "patch the bundled kernel's sites): give --traps off");
  }
}

// A bench result of shard 1 of 2 with no runs: `merge` reads it and reports INCOMPLETE
// (status 1), so that what follows it on the command line is read too.
std::string WriteIncompleteShardPart() {
  const std::string part = TempPath("part.json");
  std::ofstream(part) << R"({"schema": "sigvisor.bench/1", "interrupted": false,
    "host": {"kind": "pvm", "cpl0_emulated": true},
    "matrix": {"workloads": ["console"], "traps": ["off"], "repetitions": 1, "ops": 2,
               "memory_mib": 32, "variants": [{"name": "baseline", "settings": "",
                                               "text_bytes": 0, "image_fnv1a64": "0x0"}]},
    "shards": {"count": 2, "included": [1]}, "runs_expected": 1, "runs": [],
    "warnings": []})";
  return part;
}

// Issue 30: a part that is /dev/zero ended in std::bad_alloc (a directory read as no
// text at all: "is not JSON"). The first part is a bench result, so that the second
// is read.
TEST(BenchCliTest, MergeRefusesAPartThatIsNotARegularFile) {
  const std::string part = WriteIncompleteShardPart();
  ASSERT_EQ(Sigvisor("merge " + part).status, 1);  // read, merged, incomplete
  ExpectOneLineError(Sigvisor("merge " + part + " /dev/zero"),
                     "'/dev/zero' is a character device, not a regular file");
  const std::string dir = TempPath("part.d");
  std::filesystem::create_directories(dir);
  ExpectOneLineError(Sigvisor("merge " + part + " " + dir),
                     "'" + dir + "' is a directory, not a regular file");
}

// Issue 30: a result lost to a full disk exited with the command's own status and no
// word. The chart (--svg) and stdout are checked: one line naming what was lost,
// status 125 over the INCOMPLETE status 1 this part merges to. (bench and study
// write the chart through the same OpenOutput/WriteSvg; they need KVM.)
TEST(BenchCliTest, AResultThatCannotBeWrittenIsAnError) {
  if (!::sigvisor::testing::HaveDevFull()) GTEST_SKIP() << "no /dev/full here";
  const std::string part = WriteIncompleteShardPart();
  CommandResult r = Sigvisor("merge " + part + " --svg /dev/full");
  ExpectOneLineError(r, "--svg '/dev/full': the chart was not written: No space left on device");
  const std::string svg = TempPath("merged.svg");
  r = Sigvisor("merge " + part + " --svg " + svg);
  EXPECT_EQ(r.status, 1) << r.err;  // written: the part's own status
  EXPECT_NE(Slurp(svg).find("<svg"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(svg + ".partial"));
  const std::string dir = TempPath("svg.d");
  std::filesystem::create_directories(dir);
  ExpectOneLineError(Sigvisor("merge " + part + " --svg " + dir),
                     "--svg '" + dir + "' is a directory; give the path of a file");
  for (const char* format : {"", " --json", " --csv"}) {
    SCOPED_TRACE(format);
    r = ::sigvisor::testing::SigvisorWithStdout("merge " + part + format, "/dev/full");
    EXPECT_EQ(r.status, ::sigvisor::testing::kSigvisorFailed) << r.err;
    EXPECT_NE(r.err.find("sigvisor: error: stdout: the output of `sigvisor merge` was not "
                         "written: No space left on device\n"),
              std::string::npos)
        << r.err;
  }
}

TEST(BenchCliTest, Help) {
  for (const char* command : {"bench", "study", "merge"}) {
    CommandResult r = Sigvisor(std::string("help ") + command);
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find(std::string("usage: sigvisor ") + command), std::string::npos) << r.out;
  }
  EXPECT_NE(Sigvisor("help bench").out.find("--shard"), std::string::npos);
  EXPECT_NE(Sigvisor("help study").out.find("dequeue"), std::string::npos);
}

}  // namespace
