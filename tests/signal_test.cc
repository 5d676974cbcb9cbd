// The guest kernel's signal path under KVM: the guest's own semantics self-tests
// (one VM per case), every workload, and exact per-signal accounting.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "tests/kvm_test_support.h"
#include "vmm/app/images/embedded_images.h"

namespace sigvisor {
namespace {

using ::sigvisor::testing::BundledKernel;

RunResult Boot(const KvmSystem& kvm, const std::string& cmdline) {
  x86::MachineConfig config;
  config.cmdline = cmdline;
  config.session.timeout = absl::Seconds(120);
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, BundledKernel(), config);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? std::move(report->result) : RunResult{};
}

const PhaseResult* FindPhase(const RunResult& result, const std::string& name) {
  for (const PhaseResult& phase : result.phases) {
    if (phase.name == name) return &phase;
  }
  return nullptr;
}

uint64_t Stat(const PhaseResult& phase, const std::string& name) {
  auto it = phase.kvm_stats.find(name);
  return it == phase.kvm_stats.end() ? 0 : it->second;
}

// ---- the guest's self-checking semantics tests ------------------------------------

class SelfTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SelfTest, PassesInTheGuest) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const std::string name = GetParam();
  RunResult r = Boot(*kvm, "workload=selftest case=" + name);
  EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
  EXPECT_EQ(r.exit_code, 0) << r.console;
  EXPECT_NE(r.console.find("PASS " + name + "\n"), std::string::npos) << r.console;
  EXPECT_EQ(r.console.find("FAIL"), std::string::npos) << r.console;
}

INSTANTIATE_TEST_SUITE_P(Signals, SelfTest,
                         ::testing::Values("siginfo", "registers", "blocked", "nodefer",
                                           "resethand", "nested", "sigsuspend",
                                           "default_actions", "bad_signal_stack", "pipe",
                                           "pingpong"));

TEST(SelfTestTest, AnUnknownCaseIsAnError) {
  SIGVISOR_REQUIRE_KVM(kvm);
  RunResult r = Boot(*kvm, "workload=selftest case=nosuch");
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.console.find("no case 'nosuch'"), std::string::npos) << r.console;
}

// ---- the workloads -----------------------------------------------------------------

struct WorkloadCase {
  const char* workload;
  std::vector<std::string> phases;
};

class Workload : public ::testing::TestWithParam<WorkloadCase> {};

TEST_P(Workload, RunsAndMeasuresItsPhases) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const WorkloadCase& c = GetParam();
  RunResult r = Boot(*kvm, std::string("workload=") + c.workload + " ops=5");
  EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
  EXPECT_EQ(r.exit_code, 0) << r.console;
  for (const std::string& name : c.phases) {
    const PhaseResult* phase = FindPhase(r, name);
    ASSERT_NE(phase, nullptr) << name;
    EXPECT_EQ(phase->ops, 5u);
    EXPECT_TRUE(phase->marker_overhead.has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Classic, Workload,
    ::testing::Values(WorkloadCase{"divzero", {"divzero"}},
                      WorkloadCase{"lat_sig", {"sig_inst", "sig_hndl"}},
                      WorkloadCase{"sigpingpong", {"sigpingpong"}},
                      WorkloadCase{"pipe_rw", {"pipe_rw"}},
                      WorkloadCase{"summary",
                                   {"divzero", "sig_inst", "sig_hndl", "sigpingpong", "pipe_rw"}}),
    [](const ::testing::TestParamInfo<WorkloadCase>& info) {
      return std::string(info.param.workload);
    });

// ---- per-signal accounting -------------------------------------------------------

// Counts per op are exact: N and 2N ops give the same exits and kernel instructions
// per op, and two runs give the same counts.
TEST(AccountingTest, DivzeroCountsPerOpAreExactForNAnd2N) {
  SIGVISOR_REQUIRE_KVM(kvm);
  constexpr uint64_t kOps = 100;
  RunResult n = Boot(*kvm, "workload=divzero ops=" + std::to_string(kOps));
  RunResult twice = Boot(*kvm, "workload=divzero ops=" + std::to_string(2 * kOps));
  const PhaseResult* a = FindPhase(n, "divzero");
  const PhaseResult* b = FindPhase(twice, "divzero");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->exits_total * 2, b->exits_total);
  EXPECT_EQ(Stat(*a, "insn_emulation") * 2, Stat(*b, "insn_emulation"));
  std::printf("divzero, N=%lu: %.2f exits/op, %.2f kernel_insns/op, %.0f tsc_cycles/op, "
              "%.0f ns/op\n",
              kOps, double(a->exits_total) / kOps, double(Stat(*a, "insn_emulation")) / kOps,
              double(a->tsc_cycles) / kOps, double(a->wall_ns) / kOps);
}

TEST(AccountingTest, CountsAreStableFromRunToRun) {
  SIGVISOR_REQUIRE_KVM(kvm);
  RunResult first = Boot(*kvm, "workload=summary ops=6");
  RunResult second = Boot(*kvm, "workload=summary ops=6");
  ASSERT_EQ(first.phases.size(), second.phases.size());
  for (size_t i = 0; i < first.phases.size(); ++i) {
    const PhaseResult& a = first.phases[i];
    const PhaseResult& b = second.phases[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.exits, b.exits) << a.name;
    EXPECT_EQ(Stat(a, "insn_emulation"), Stat(b, "insn_emulation")) << a.name;
  }
}

TEST(AccountingTest, EveryWorkloadIsExactPerOp) {
  SIGVISOR_REQUIRE_KVM(kvm);
  RunResult n = Boot(*kvm, "workload=summary ops=3");
  RunResult twice = Boot(*kvm, "workload=summary ops=6");
  ASSERT_EQ(n.phases.size(), twice.phases.size());
  for (size_t i = 0; i < n.phases.size(); ++i) {
    EXPECT_EQ(Stat(n.phases[i], "insn_emulation") * 2, Stat(twice.phases[i], "insn_emulation"))
        << n.phases[i].name;
  }
}

}  // namespace
}  // namespace sigvisor
