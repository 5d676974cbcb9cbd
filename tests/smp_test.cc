// The bundled kernel on several vCPUs (docs/smp.md): signals between tasks pinned to
// different CPUs, each IPI sent the three ways the machine offers, counted per op on
// every vCPU from the guest's own IPI counts, KVM's statistics and the VMM's ledger.
//
// Exact per op, with each side of a workload pinned alone on its CPU
// (docs/guest-kernel.md, "Several CPUs"): every cross-CPU signal costs one IPI, so
// each of the two vCPUs sends one and takes one per op (two signals an op, one each
// way), as the kernel's own count says exactly (guest_ipis), and KVM injects it (its
// irq_injections: at least one per op, more only where an exit cut an
// injection short); x2APIC and xAPIC IPIs stay inside KVM's local APIC (no exit reaches
// the VMM); a pv IPI is one hypercall, one VMM exit per signal sent. Halts are not
// exact (a task may still be on its way to sleep when its answer comes) and are not
// asserted.
//
// Both lanes: a KVM test (tags = ["kvm"]); the refusals need no KVM and run everywhere.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "tests/run_json_support.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::PhaseNamed;
using ::sigvisor::testing::RunJson;
using ::sigvisor::testing::Sigvisor;
using json = nlohmann::json;

constexpr char kSkip[] = "no /dev/kvm: the hardware lane runs this (docs/testing.md)";
const std::vector<std::string> kWorkloads = {"xcpu_pingpong", "xcpu_kick", "xcpu_wake"};
constexpr int kOps = 8;

// One IPI received by each vCPU per op (two signals an op, one each way), and the
// exits that reached the VMM on each vCPU: none for the APIC ways, one hypercall (io)
// per op for pv.
TEST(SmpTest, EachCrossCpuSignalIsOneIpiAndItsExitsAreTheMethods) {
  if (!HaveKvm()) GTEST_SKIP() << kSkip;
  for (const std::string ipi : {"x2apic", "xapic", "pv"}) {
    for (const std::string& workload : kWorkloads) {
      SCOPED_TRACE(ipi + " " + workload);
      const json doc = RunJson("--vcpus 2 --ipi " + ipi + " --workload " + workload + " --ops " +
                               std::to_string(kOps));
      EXPECT_EQ(doc["lapic"], "kvm");
      const json* phase = PhaseNamed(doc, workload);
      if (phase == nullptr) continue;
      ASSERT_TRUE(phase->contains("vcpus")) << phase->dump();
      const json& vcpus = (*phase)["vcpus"];
      ASSERT_EQ(vcpus.size(), 2u) << phase->dump();
      for (int cpu = 0; cpu < 2; ++cpu) {
        SCOPED_TRACE("vcpu " + std::to_string(cpu));
        const json& v = vcpus[cpu];
        EXPECT_EQ(v["vcpu"], cpu);
        // The kernel's own count, exact: one IPI sent by each and one sent to each per op.
        ASSERT_TRUE(v.contains("guest_ipis")) << v.dump();
        EXPECT_EQ(v["guest_ipis"]["sent"], kOps) << v.dump();
        EXPECT_EQ(v["guest_ipis"]["received"], kOps) << v.dump();
        EXPECT_EQ(v["per_op"]["ipis_received"], 1.0) << v.dump();
        // KVM's irq_injections: the IPI each vCPU receives per op, and once more for
        // each injection an exit cut short (KVM injects it again); each injection is
        // made on an entry, so there are never more than the vCPU's exits (+1).
        const uint64_t injected = v["kvm_stats"].value("irq_injections", uint64_t{0});
        EXPECT_GE(injected, static_cast<uint64_t>(kOps)) << v.dump();
        if (v["kvm_exits"].is_object() && v["kvm_exits"]["total"].is_number()) {
          EXPECT_LE(injected, v["kvm_exits"]["total"].get<uint64_t>() + 1) << v.dump();
        }
        const uint64_t io = v["exits"]["by_reason"].value("io", uint64_t{0});
        const uint64_t total = v["exits"]["total"].get<uint64_t>();
        if (ipi == "pv") {
          EXPECT_EQ(io, static_cast<uint64_t>(kOps)) << v.dump();  // one SEND_IPI per op
          EXPECT_EQ(total, static_cast<uint64_t>(kOps)) << v.dump();
        } else {
          EXPECT_EQ(total, 0u) << v.dump();  // the APIC is KVM's: nothing reaches the VMM
        }
      }
    }
  }
}

// The VMM's own local APICs (--lapic vmm): every APIC access an IPI needs is an exit
// to the VMM, exactly, per op on each vCPU (one IPI sent, one taken): x2apic an ICR MSR
// write and an EOI MSR write; xapic the ICR's two halves and the EOI, in MMIO; pv the
// send_ipi hypercall and the EOI (x2APIC mode). The halts, the kicks that get a vCPU out
// of KVM_RUN for an IPI and the interrupt windows follow the host's timing: not asserted.
TEST(SmpTest, WithTheVmmsLocalApicsEachIpiAccessIsAnExitOfItsOwn) {
  if (!HaveKvm()) GTEST_SKIP() << kSkip;
  struct Way {
    std::string ipi;
    uint64_t msr, mmio, io;  // per op, on each of vCPUs 0 and 1
  };
  for (const Way& way : {Way{"x2apic", 2, 0, 0}, Way{"xapic", 0, 3, 0}, Way{"pv", 1, 0, 1}}) {
    for (const std::string& workload : kWorkloads) {
      SCOPED_TRACE(way.ipi + " " + workload);
      const json doc = RunJson("--vcpus 2 --lapic vmm --ipi " + way.ipi + " --workload " +
                               workload + " --ops " + std::to_string(kOps));
      EXPECT_EQ(doc["lapic"], "vmm");
      const json* phase = PhaseNamed(doc, workload);
      if (phase == nullptr) continue;
      const json& vcpus = (*phase)["vcpus"];
      ASSERT_EQ(vcpus.size(), 2u) << phase->dump();
      for (int cpu = 0; cpu < 2; ++cpu) {
        SCOPED_TRACE("vcpu " + std::to_string(cpu));
        const json& v = vcpus[cpu];
        EXPECT_EQ(v["guest_ipis"]["sent"], kOps) << v.dump();
        EXPECT_EQ(v["guest_ipis"]["received"], kOps) << v.dump();
        const json& by_reason = v["exits"]["by_reason"];
        EXPECT_EQ(by_reason.value("msr", uint64_t{0}), way.msr * kOps) << v.dump();
        EXPECT_EQ(by_reason.value("mmio", uint64_t{0}), way.mmio * kOps) << v.dump();
        EXPECT_EQ(by_reason.value("io", uint64_t{0}), way.io * kOps) << v.dump();
      }
    }
  }
}

// Every vCPU started and the phase ran on them; the run's exit table names the vCPU.
TEST(SmpTest, FourVcpusRunTheWorkloadsTooAndTheTextHasAColumnEach) {
  if (!HaveKvm()) GTEST_SKIP() << kSkip;
  const CommandResult r = Sigvisor("run --vcpus 4 --workload xcpu_kick --ops 4 --quiet");
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("vcpu0     vcpu1     vcpu2     vcpu3"), std::string::npos) << r.out;
  // The kernel's own IPI count, one row per direction: vCPUs 2 and 3 neither send nor
  // take any (4 ops: 1.00 per op on vCPUs 0 and 1).
  EXPECT_NE(r.out.find("IPIs sent, guest's count          1.00      1.00      0.00      0.00"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("IPIs received, guest's count      1.00      1.00      0.00      0.00"),
            std::string::npos)
      << r.out;
}

TEST(SmpTest, AUniprocessorBuildOrMachineIsRefusedWithTheReason) {
  ExpectOneLineError(Sigvisor("run --vcpus 2 --variant accelerated --workload hello"), "smp");
  ExpectOneLineError(Sigvisor("run --vcpus 2 --trap patch --workload xcpu_kick"), "--trap");
  ExpectOneLineError(Sigvisor("run --ipi pv --workload hello"), "--ipi");
  ExpectOneLineError(Sigvisor("run --lapic vmm --workload hello"), "--lapic");
  ExpectOneLineError(Sigvisor("run --vcpus 2 --lapic qemu --workload xcpu_kick"), "--lapic");
  ExpectOneLineError(Sigvisor("run --vcpus 9 --workload xcpu_kick"), "--vcpus");
  ExpectOneLineError(Sigvisor("run --workload xcpu_kick"), "it needs 2 vCPUs");
  ExpectOneLineError(Sigvisor("trace --workload xcpu_wake"), "it needs 2 vCPUs");
}

}  // namespace
