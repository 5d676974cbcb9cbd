// Every kernel variant behaves identically to its programs (the full self-test suite
// passes), and each seed's change moves the counts the way it should.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "arch/x86_64/vmm/trace/step_tracer.h"
#include "arch/x86_64/vmm/trap/trap_engine.h"
#include "tests/kvm_test_support.h"
#include "vmm/app/images/embedded_images.h"
#include "vmm/trace/analysis.h"

namespace sigvisor {
namespace {

RunResult BootVariant(const KvmSystem& kvm, const KernelVariant& variant,
                      const std::string& cmdline, TrapMechanism trap = TrapMechanism::kOff) {
  absl::StatusOr<ElfImage> image = ParseKernel(variant);
  EXPECT_TRUE(image.ok()) << image.status();
  if (!image.ok()) return {};
  x86::MachineConfig config;
  config.cmdline = cmdline;
  config.trap = trap;
  config.session.timeout = absl::Seconds(120);
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, *image, config);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? std::move(report->result) : RunResult{};
}

// Kernel instructions per op of `phase` (this host counts them: insn_emulation).
double InsnsPerOp(const RunResult& result, const std::string& phase_name) {
  for (const PhaseResult& phase : result.phases) {
    if (phase.name != phase_name) continue;
    auto it = phase.kvm_stats.find("insn_emulation");
    return it == phase.kvm_stats.end() ? -1 : double(it->second) / double(phase.ops);
  }
  ADD_FAILURE() << "no phase " << phase_name;
  return -1;
}

class EveryVariant : public ::testing::TestWithParam<size_t> {};

TEST_P(EveryVariant, PassesTheSignalSemanticsSuite) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const KernelVariant& variant = KernelVariants()[GetParam()];
  RunResult r = BootVariant(*kvm, variant, "workload=selftest case=all");
  EXPECT_EQ(r.outcome, Outcome::kExited) << variant.name << ": " << r.diagnosis;
  EXPECT_EQ(r.exit_code, 0) << variant.name << "\n" << r.console;
  EXPECT_EQ(r.console.find("FAIL"), std::string::npos) << variant.name << "\n" << r.console;
}

INSTANTIATE_TEST_SUITE_P(Variants, EveryVariant,
                         ::testing::Range(size_t{0}, KernelVariants().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string name(KernelVariants()[info.param].name);
                           for (char& c : name) {
                             if (c == ',' || c == '=') c = '_';
                           }
                           return name;
                         });

// Only meaningful where the host counts kernel instructions (CPL0 emulated).
bool HostCountsKernelInstructions(const RunResult& result) {
  auto it = result.kvm_stats.find("insn_emulation");
  return it != result.kvm_stats.end() && it->second > 0;
}

// Kernel instructions per op of `phase` in `variant`: the ledger's where the host
// counts them (CPL0 emulated), else the tracer's (`sigvisor trace`), which steps every
// kernel instruction of the phase on hardware KVM and counts as the ledger would.
double KernelInsnsPerOp(const KvmSystem& kvm, const std::string& variant,
                        const std::string& workload, const std::string& phase) {
  const std::string cmdline = "workload=" + workload + " ops=2";
  absl::StatusOr<HostInfo> host = DetectHost(kvm);
  EXPECT_TRUE(host.ok()) << host.status();
  if (!host.ok()) return -1;
  if (host->cpl0_emulated) {
    RunResult r = BootVariant(kvm, **ResolveVariant(variant), cmdline);
    EXPECT_TRUE(HostCountsKernelInstructions(r));
    return InsnsPerOp(r, phase);
  }
  absl::StatusOr<ElfImage> image = ParseKernel(**ResolveVariant(variant));
  EXPECT_TRUE(image.ok()) << image.status();
  if (!image.ok()) return -1;
  trace::Trace t;
  x86::MachineConfig config;
  config.cmdline = cmdline;
  config.session.timeout = absl::Seconds(120);
  x86::StepTracerOptions options;
  options.phase = phase;
  config.interceptors.push_back(x86::StepTracer::Factory(options, &t));
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, *image, config);
  EXPECT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(t.complete) << t.stopped_why;
  const trace::Analysis a = trace::Analyze(t);
  EXPECT_EQ(a.ops.size(), 2u) << a.ops_note;
  EXPECT_TRUE(a.ops_uniform) << variant << " " << phase;
  return a.ops.empty() ? -1 : double(a.ops[0].kernel_insns);
}

TEST(SeedEffectTest, CerrExecutesFewerKernelInstructionsPerSignal) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const double before = KernelInsnsPerOp(*kvm, "baseline", "lat_sig", "sig_hndl");
  const double after = KernelInsnsPerOp(*kvm, "uaccess=cerr", "lat_sig", "sig_hndl");
  std::printf("sig_hndl kernel instructions per signal: err_or %.1f, cerr %.1f\n", before, after);
  EXPECT_GT(after, 0);
  EXPECT_LT(after, before);
}

TEST(SeedEffectTest, DirectPerCpuDataExecutesFewerKernelInstructionsPerSyscall) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const double before = KernelInsnsPerOp(*kvm, "baseline", "pipe_rw", "pipe_rw");
  const double after = KernelInsnsPerOp(*kvm, "pda=direct", "pipe_rw", "pipe_rw");
  std::printf("pipe_rw kernel instructions per iteration: gs %.1f, direct %.1f\n", before, after);
  EXPECT_GT(after, 0);
  EXPECT_LT(after, before);
}

// Traps of `kind` per op in `phase` (the patch mechanism counts them exactly).
double TrapsPerOp(const RunResult& result, const std::string& phase_name, const std::string& kind) {
  for (const PhaseResult& phase : result.phases) {
    if (phase.name != phase_name) continue;
    auto it = phase.traps.by_kind.find(kind);
    return it == phase.traps.by_kind.end() ? 0.0 : double(it->second) / double(phase.ops);
  }
  ADD_FAILURE() << "no phase " << phase_name;
  return -1;
}

TEST(SeedEffectTest, Dr7AlwaysWritesOncePerSignalAndLazyNever) {
  SIGVISOR_REQUIRE_KVM(kvm);
  for (const char* workload : {"divzero", "lat_sig"}) {
    const std::string cmdline = std::string("workload=") + workload + " ops=10";
    const std::string phase = std::string(workload) == "divzero" ? "divzero" : "sig_hndl";
    RunResult always =
        BootVariant(*kvm, **ResolveVariant("baseline"), cmdline, TrapMechanism::kPatch);
    RunResult lazy =
        BootVariant(*kvm, **ResolveVariant("dr7=lazy"), cmdline, TrapMechanism::kPatch);
    EXPECT_EQ(TrapsPerOp(always, phase, "dr_write"), 1.0) << workload;
    EXPECT_EQ(TrapsPerOp(lazy, phase, "dr_write"), 0.0) << workload;
    // In kernel instructions the two are within one of each other: the saving is the
    // cost of `mov %dr7` itself (a trap here, a serialising instruction on metal).
    std::printf("%s: dr7=always %.1f kernel instructions per signal, dr7=lazy %.1f\n",
                workload, InsnsPerOp(always, phase), InsnsPerOp(lazy, phase));
  }
}

TEST(SeedEffectTest, GsPerCpuDataLoadsTheGsBaseTwicePerSyscallAndDirectNever) {
  SIGVISOR_REQUIRE_KVM(kvm);
  RunResult gs = BootVariant(*kvm, **ResolveVariant("baseline"), "workload=pipe_rw ops=10",
                             TrapMechanism::kPatch);
  RunResult direct = BootVariant(*kvm, **ResolveVariant("pda=direct"), "workload=pipe_rw ops=10",
                                 TrapMechanism::kPatch);
  // One pipe_rw op is two system calls: swapgs on entry and on exit of each.
  EXPECT_EQ(TrapsPerOp(gs, "pipe_rw", "segment_load"), 4.0);
  EXPECT_EQ(TrapsPerOp(direct, "pipe_rw", "segment_load"), 0.0);
}

// The debugreg=pv builds (the seed builds' counterparts for --trap=pv).
std::vector<const KernelVariant*> PvBuilds() {
  std::vector<const KernelVariant*> builds;
  for (const KernelVariant& variant : KernelVariants()) {
    if (variant.name.find("debugreg=pv") != std::string_view::npos) builds.push_back(&variant);
  }
  return builds;
}

TEST(PvBuildTest, EveryPvBuildPassesTheSuiteThroughThePage) {
  SIGVISOR_REQUIRE_KVM(kvm);
  ASSERT_EQ(PvBuilds().size(), 4u);
  for (const KernelVariant* variant : PvBuilds()) {
    RunResult r = BootVariant(*kvm, *variant, "workload=selftest case=all", TrapMechanism::kPv);
    EXPECT_EQ(r.outcome, Outcome::kExited) << variant->name << ": " << r.diagnosis;
    EXPECT_EQ(r.exit_code, 0) << variant->name << "\n" << r.console;
    EXPECT_EQ(r.console.find("FAIL"), std::string::npos) << variant->name << "\n" << r.console;
    // At boot the pda=gs kernels write the GS bases (two wrmsr), counted in the page.
    const bool pda_gs = DescribeVariant(*variant).find("pda=gs") != std::string::npos;
    EXPECT_EQ(r.traps.by_kind().count("segment_load") ? r.traps.by_kind().at("segment_load") : 0,
              pda_gs ? 2u : 0u)
        << variant->name;
  }
}

const PhaseResult* Phase(const RunResult& result, const std::string& name) {
  for (const PhaseResult& phase : result.phases) {
    if (phase.name == name) return &phase;
  }
  ADD_FAILURE() << "no phase " << name;
  return nullptr;
}

// The counts of --trap=pv are patch's, with no exit: one DR7 write per baseline
// signal, none with dr7=lazy; no load either way (the baseline writes DR7 with no
// breakpoint enabled). Exact per op: N and 2N ops give the same.
TEST(PvBuildTest, Dr7WritesPerSignalAsWithPatchAndNoExit) {
  SIGVISOR_REQUIRE_KVM(kvm);
  for (const char* workload : {"divzero", "lat_sig"}) {
    const std::string phase = std::string(workload) == "divzero" ? "divzero" : "sig_hndl";
    for (auto [spec, writes] : {std::pair{"debugreg=pv", 1u}, {"dr7=lazy,debugreg=pv", 0u}}) {
      std::optional<double> insns_per_op;
      for (uint64_t ops : {10, 20}) {
        SCOPED_TRACE(std::string(workload) + " " + spec + " ops=" + std::to_string(ops));
        RunResult r = BootVariant(*kvm, **ResolveVariant(spec),
                                  std::string("workload=") + workload + " ops=" + std::to_string(ops),
                                  TrapMechanism::kPv);
        ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
        const PhaseResult* p = Phase(r, phase);
        ASSERT_NE(p, nullptr);
        const TrapCounts expected =
            writes ? TrapCounts{{"dr_write", writes * ops}} : TrapCounts{};
        EXPECT_EQ(p->traps.by_kind, expected);
        EXPECT_EQ(p->exits_total, 0u);  // no trap exits, and no hypercall
        EXPECT_EQ(p->traps.dr_loads, 0u);
        EXPECT_EQ(p->traps.hypercalls, 0u);
        if (writes) {  // one site: the DR7 write of the signal path
          ASSERT_EQ(p->traps.by_site.size(), 1u);
          EXPECT_EQ(p->traps.by_site.begin()->first.rfind("exit_to_user_mode+0x", 0), 0u)
              << p->traps.by_site.begin()->first;
        }
        if (HostCountsKernelInstructions(r)) {
          const double per_op = InsnsPerOp(r, phase);
          if (insns_per_op) {
            EXPECT_EQ(per_op, *insns_per_op);
          }
          insns_per_op = per_op;
        }
      }
      if (insns_per_op) std::printf("%s %s: %.1f kernel instructions per signal\n", workload, spec, *insns_per_op);
    }
  }
}

}  // namespace
}  // namespace sigvisor
