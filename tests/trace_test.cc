// `sigvisor trace` under KVM: one divzero op single-stepped, its kernel instructions
// checked against the ledger (the same run's and an untraced run's), the signal
// path's functions and stages in the profile, a trap mechanism under the tracer, and
// the --diff of dr7=always against dr7=lazy end to end.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "arch/x86_64/vmm/trace/step_tracer.h"
#include "tests/kvm_test_support.h"
#include "vmm/trace/analysis.h"

namespace sigvisor {
namespace {

using ::sigvisor::testing::BundledKernel;

std::optional<uint64_t> KernelInsns(const RunResult& r, const std::string& phase) {
  for (const PhaseResult& p : r.phases) {
    if (p.name != phase) continue;
    auto it = p.kvm_stats.find("insn_emulation");
    if (it != p.kvm_stats.end()) return it->second;
  }
  return std::nullopt;
}

struct Traced {
  RunResult result;
  trace::Trace trace;
  trace::Analysis analysis;
};

Traced TraceDivzero(const KvmSystem& kvm, bool cpl0_emulated, std::string_view variant,
                    TrapMechanism trap = TrapMechanism::kOff, int ops = 1) {
  Traced t;
  x86::MachineConfig config;
  config.cmdline = absl::StrCat("workload=divzero ops=", ops);
  config.cpl0_emulated = cpl0_emulated;
  config.trap = trap;
  config.session.timeout = absl::Seconds(120);
  config.interceptors.push_back(x86::StepTracer::Factory({}, &t.trace));
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, BundledKernel(variant), config);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return t;
  t.result = std::move(report->result);
  t.trace.ledger_kernel_insns = KernelInsns(t.result, "divzero");
  for (const PhaseResult& p : t.result.phases) {
    if (p.name == "divzero" && p.marker_overhead) {
      auto it = p.marker_overhead->kvm_stats.find("insn_emulation");
      if (it != p.marker_overhead->kvm_stats.end()) t.trace.ledger_marker_kernel_insns = it->second;
    }
  }
  t.analysis = trace::Analyze(t.trace);
  return t;
}

bool Cpl0Emulated(const KvmSystem& kvm) {
  absl::StatusOr<HostInfo> host = DetectHost(kvm);
  return host.ok() && host->cpl0_emulated;
}

TEST(TraceTest, OneDivzeroOpMatchesTheLedger) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const bool counts = Cpl0Emulated(*kvm);
  Traced t = TraceDivzero(*kvm, counts, "baseline");
  ASSERT_EQ(t.result.outcome, Outcome::kExited) << t.result.diagnosis;
  EXPECT_EQ(t.result.exit_code, 0) << t.result.console;
  ASSERT_TRUE(t.trace.complete) << t.trace.stopped_why;
  EXPECT_EQ(t.trace.phase, "divzero");
  ASSERT_EQ(t.analysis.ops.size(), 1u) << t.analysis.ops_note;
  // Single steps are the tracer's own exits: the ledger's exit count is untouched.
  EXPECT_GT(t.trace.vmm_steps, 0u);
  for (const PhaseResult& p : t.result.phases) {
    if (p.name == "divzero") {
      EXPECT_EQ(p.exits_total, 0u);
    }
  }
  if (!counts) {
    // Hardware KVM counts no kernel instructions to check against: the trace's own
    // count must then be exact on its own terms, the same for each op of a longer
    // phase (the kernel-entry stops lose no entry, and the markers stay outside).
    Traced two = TraceDivzero(*kvm, counts, "baseline", TrapMechanism::kOff, 2);
    ASSERT_EQ(two.analysis.ops.size(), 2u) << two.analysis.ops_note;
    EXPECT_EQ(two.analysis.ops[0].kernel_insns, t.analysis.ops[0].kernel_insns);
    EXPECT_EQ(two.analysis.ops[1].kernel_insns, t.analysis.ops[0].kernel_insns);
    EXPECT_EQ(two.analysis.marker_kernel_insns, t.analysis.marker_kernel_insns);
    return;
  }
  ASSERT_TRUE(t.trace.ledger_kernel_insns.has_value());
  EXPECT_EQ(t.analysis.ops[0].kernel_insns, *t.trace.ledger_kernel_insns);
  EXPECT_EQ(t.analysis.marker_kernel_insns, t.trace.ledger_marker_kernel_insns);
  EXPECT_TRUE(t.analysis.matches_ledger.value_or(false));

  // And the ledger of a run nobody traced says the same.
  x86::MachineConfig plain;
  plain.cmdline = "workload=divzero ops=1";
  plain.cpl0_emulated = true;
  absl::StatusOr<x86::MachineReport> untraced = x86::BootAndRun(*kvm, BundledKernel(), plain);
  ASSERT_TRUE(untraced.ok()) << untraced.status();
  EXPECT_EQ(KernelInsns(untraced->result, "divzero"), t.analysis.ops[0].kernel_insns);
}

TEST(TraceTest, TheProfileNamesTheSignalPath) {
  SIGVISOR_REQUIRE_KVM(kvm);
  Traced t = TraceDivzero(*kvm, Cpl0Emulated(*kvm), "baseline");
  ASSERT_EQ(t.analysis.ops.size(), 1u) << t.analysis.ops_note;
  std::set<std::string> functions;
  for (const trace::FunctionRow& row : t.analysis.profile) functions.insert(row.function);
  for (const char* name : {"trap_common", "x86_trap", "force_sig_fault", "send_signal",
                           "exit_to_user_mode", "get_signal", "dequeue_signal", "set_debugreg7",
                           "handle_signal", "setup_rt_frame", "setup_sigcontext",
                           "copy_siginfo_to_user", "sys_rt_sigreturn", "restore_sigcontext"}) {
    EXPECT_TRUE(functions.count(name)) << name;
  }
  std::map<std::string, uint64_t> stages;
  uint64_t total = 0;
  for (const trace::StageRow& row : t.analysis.stages) {
    stages[row.stage] = row.kernel_insns;
    total += row.kernel_insns;
  }
  EXPECT_EQ(total, t.analysis.ops[0].kernel_insns);
  for (const char* stage : {"exception entry", "signal generation", "dequeue", "DR7 write",
                            "frame setup", "return to the handler", "handler (CPL3, opaque)",
                            "sigreturn entry", "sys_rt_sigreturn", "sigreturn exit"}) {
    EXPECT_TRUE(stages.count(stage)) << stage;
  }
  EXPECT_GT(stages["DR7 write"], 0u);
  // The listing marks the opaque user code with the way the kernel was entered: the
  // system call's `int $0x80` is delivered as itself on hardware KVM, and as the #UD
  // the kernel recognises on PVM (arch/x86_64/guest/traps.c).
  const std::string sigreturn_via = Cpl0Emulated(*kvm) ? "#UD: int $0x80 (rt_sigreturn)"
                                                       : "int $0x80 (rt_sigreturn)";
  bool de = false, sigreturn = false;
  for (const trace::Entry& e : t.trace.entries) {
    if (e.kind != trace::Entry::Kind::kOpaque) continue;
    de |= e.exit_via == "#DE";
    sigreturn |= e.exit_via == sigreturn_via;
  }
  EXPECT_TRUE(de);
  EXPECT_TRUE(sigreturn) << sigreturn_via;
}

TEST(TraceTest, UnderTheTrapEngineEachSiteIsEmulatedAndCounted) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const bool counts = Cpl0Emulated(*kvm);
  Traced t = TraceDivzero(*kvm, counts, "baseline", TrapMechanism::kPatch);
  ASSERT_EQ(t.result.outcome, Outcome::kExited) << t.result.diagnosis;
  ASSERT_EQ(t.analysis.ops.size(), 1u) << t.analysis.ops_note;
  int trapped = 0;
  for (size_t i = t.analysis.ops[0].begin; i < t.analysis.ops[0].end; ++i) {
    for (const std::string& note : t.trace.entries[i].notes) trapped += note.starts_with("trap: ");
  }
  EXPECT_EQ(trapped, 5);  // the DR7 write and four swapgs, as the trap ledger counts them
  if (counts) {
    EXPECT_TRUE(t.analysis.matches_ledger.value_or(false));
  }
}

// Where CPL0 runs directly, the tracer needs 2 MiB of guest-physical address space
// above RAM for its kernel-entry stops (kernel_entry_stops.h); a guest with all of
// the first GiB as RAM leaves none, and the trace says so instead of losing entries.
TEST(TraceTest, KernelEntryStopsNeedRoomAboveRam) {
  SIGVISOR_REQUIRE_KVM(kvm);
  if (Cpl0Emulated(*kvm)) {
    GTEST_SKIP() << "this host emulates CPL0 and steps every kernel instruction: the tracer "
                    "installs no kernel-entry stops here";
  }
  trace::Trace t;
  x86::MachineConfig config;
  config.memory_bytes = 1ull << 30;
  config.cmdline = "workload=divzero ops=1";
  config.session.timeout = absl::Seconds(120);
  config.interceptors.push_back(x86::StepTracer::Factory({}, &t));
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm, BundledKernel(), config);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->result.outcome, Outcome::kExited) << report->result.diagnosis;
  EXPECT_FALSE(t.complete);
  EXPECT_NE(t.stopped_why.find("use a smaller --memory"), std::string::npos) << t.stopped_why;
  EXPECT_TRUE(t.entries.empty());
}

// ---- the command -------------------------------------------------------------------

std::string Slurp(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(TraceCliTest, DiffShowsTheDr7WriteOnlyInTheFirst) {
  if (access("/dev/kvm", R_OK | W_OK) != 0) GTEST_SKIP() << "no /dev/kvm";
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string out = std::string(dir ? dir : "/tmp") + "/trace.json";
  const int raw = std::system(("vmm/app/cli/sigvisor trace --workload divzero --ops 1 --variant "
                               "dr7=always --diff dr7=lazy --json >" + out + " 2>/dev/null")
                                  .c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  ASSERT_EQ(WEXITSTATUS(raw), 0);
  const nlohmann::json doc = nlohmann::json::parse(Slurp(out));
  EXPECT_EQ(doc["schema"], "sigvisor.trace-diff/1");
  EXPECT_EQ(doc["left"]["schema"], "sigvisor.trace/1");
  auto dr7_writes = [](const nlohmann::json& list) {
    int n = 0;
    for (const auto& e : list) n += e.value("debug_control_write", false);
    return n;
  };
  EXPECT_EQ(dr7_writes(doc["diff"]["instructions"]["left_only"]), 1);
  EXPECT_EQ(dr7_writes(doc["diff"]["instructions"]["right_only"]), 0);
  // Everywhere in each trace: the write is in the first only.
  EXPECT_EQ(dr7_writes(doc["left"]["entries"]), 1);
  EXPECT_EQ(dr7_writes(doc["right"]["entries"]), 0);
}

TEST(TraceCliTest, TextSummaryAndErrors) {
  if (access("/dev/kvm", R_OK | W_OK) != 0) GTEST_SKIP() << "no /dev/kvm";
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string out = std::string(dir ? dir : "/tmp") + "/trace.txt";
  const std::string err = std::string(dir ? dir : "/tmp") + "/trace.err";
  int raw = std::system(
      ("vmm/app/cli/sigvisor trace --workload divzero --ops 1 --stages >" + out + " 2>" + err).c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 0) << Slurp(err);
  const std::string text = Slurp(out);
  EXPECT_NE(text.find("profile of op 1"), std::string::npos) << text;
  EXPECT_NE(text.find("stages of op 1"), std::string::npos) << text;
  EXPECT_NE(text.find("get_signal"), std::string::npos) << text;
  EXPECT_EQ(text.find("== op 1"), std::string::npos) << "--stages prints no listing";
  raw = std::system(("vmm/app/cli/sigvisor trace --workload divzero --phase nosuch >" + out + " 2>" +
                     err)
                        .c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 125);  // sigvisor failed (`sigvisor help`, "exit status")
  EXPECT_NE(Slurp(err).find("no phase called 'nosuch'"), std::string::npos) << Slurp(err);
}

}  // namespace
}  // namespace sigvisor
