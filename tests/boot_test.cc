// Boots real guests under KVM and checks what the VMM reports: console, exit status,
// exact exit counts by reason, the watchdog and every failure diagnosis.
#include <gtest/gtest.h>

#include <string>

#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "tests/kvm_test_support.h"
#include "vmm/app/images/embedded_images.h"

namespace sigvisor {
namespace {

using ::sigvisor::testing::BundledKernel;
using ::sigvisor::testing::LoadTestGuest;

x86::MachineReport Boot(const KvmSystem& kvm, const ElfImage& image, const std::string& cmdline,
                        absl::Duration timeout = absl::Seconds(60)) {
  x86::MachineConfig config;
  config.cmdline = cmdline;
  config.session.timeout = timeout;
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, image, config);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : x86::MachineReport{};
}

uint64_t CountDetail(const ExitLedger& ledger, const std::string& reason, const std::string& detail) {
  const auto details = ledger.by_detail();  // built when asked: keep it for the lookup
  auto it = details.find({reason, detail});
  return it == details.end() ? 0 : it->second.count;
}

TEST(BundledKernelTest, HelloRunsInUserModeAndExitsZero) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, BundledKernel(), "workload=hello");
  const RunResult& r = report.result;
  EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.console.find("hello from user mode: pid 1"), std::string::npos) << r.console;
  ASSERT_EQ(r.phases.size(), 1u);
  EXPECT_EQ(r.phases[0].name, "getpid");
  EXPECT_EQ(r.phases[0].ops, 16u);
  EXPECT_EQ(r.phases[0].exits_total, 0u);  // a syscall that stays in the guest
}

TEST(BundledKernelTest, ConsoleWorkloadMakesExactlyOneExitPerWrite) {
  SIGVISOR_REQUIRE_KVM(kvm);
  ElfImage kernel = BundledKernel();
  for (uint64_t ops : {3, 12}) {
    x86::MachineReport report = Boot(*kvm, kernel, "workload=console ops=" + std::to_string(ops));
    const RunResult& r = report.result;
    EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
    ASSERT_EQ(r.phases.size(), 1u);
    EXPECT_EQ(r.phases[0].exits_total, ops);
    EXPECT_EQ(r.phases[0].exits, (ExitCounts{{"io", ops}}));
    EXPECT_EQ(CountDetail(r.ledger, "io", "port 0x501 out (hypercall console_write)"), ops);
    // And one orders call: the kernel's quiescent point, where boot ends.
    EXPECT_EQ(CountDetail(r.ledger, "io", "port 0x509 out (hypercall orders)"), 1u);
  }
}

TEST(BundledKernelTest, UserDivideByZeroKillsInitWithSigfpe) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, BundledKernel(), "workload=fault");
  EXPECT_EQ(report.result.outcome, Outcome::kExited);
  EXPECT_EQ(report.result.exit_code, 128 + 8);
  EXPECT_NE(report.result.console.find("init[1]: killed by signal 8 (SIGFPE)"), std::string::npos)
      << report.result.console;
}

TEST(BundledKernelTest, UnknownWorkloadIsReportedByTheGuest) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, BundledKernel(), "workload=nosuch");
  EXPECT_EQ(report.result.exit_code, 127);
  EXPECT_NE(report.result.console.find("unknown workload 'nosuch'"), std::string::npos);
}

TEST(PortIoTest, ExitCountsAreExactForAKnownNumberOfPortWrites) {
  SIGVISOR_REQUIRE_KVM(kvm);
  ElfImage guest = LoadTestGuest("exit_with");
  for (uint64_t writes : {0, 1, 25}) {
    x86::MachineReport report = Boot(*kvm, guest, "ops=" + std::to_string(writes));
    const RunResult& r = report.result;
    EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.console, std::string(writes, 'x'));
    EXPECT_EQ(r.ledger.total(), writes + 1);
    EXPECT_EQ(r.ledger.by_reason().at("io").count, writes + 1);
    EXPECT_EQ(CountDetail(r.ledger, "io", "port 0x3f8 out (serial)"), writes);
    EXPECT_EQ(CountDetail(r.ledger, "io", "port 0x502 out (hypercall exit)"), 1u);
  }
}

TEST(PortIoTest, DebugExitDeviceEncodesTheStatusAsQemuDoes) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, LoadTestGuest("debug_exit"), "");
  EXPECT_EQ(report.result.outcome, Outcome::kExited);
  EXPECT_EQ(report.result.exit_code, (5 << 1) | 1);
}

// A failure's diagnosis names where the guest was, or, for a triple fault on a host
// whose KVM resets the vCPU at the shutdown (AMD SVM; never PVM, which keeps the
// state), says that this is lost.
void ExpectWhere(const KvmSystem& kvm, const RunResult& r, const std::string& rip,
                 const std::string& bytes) {
  if (r.diagnosis.find("reset the vCPU at the shutdown") != std::string::npos) {
    EXPECT_EQ(r.outcome, Outcome::kTripleFault);
    absl::StatusOr<HostInfo> host = DetectHost(kvm);
    ASSERT_TRUE(host.ok()) << host.status();
    EXPECT_EQ(host->kind, "hardware") << r.diagnosis;
    return;
  }
  EXPECT_NE(r.diagnosis.find(rip), std::string::npos) << r.diagnosis;
  EXPECT_NE(r.diagnosis.find(bytes), std::string::npos) << r.diagnosis;
}

TEST(FailureTest, TripleFaultIsReportedWithRipAndSymbol) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, LoadTestGuest("triple_fault"), "");
  EXPECT_EQ(report.result.outcome, Outcome::kTripleFault);
  EXPECT_NE(report.result.exit_code, 0);
  ExpectWhere(*kvm, report.result, "rip 0x100001 (crash_here", "bytes 0f 0b");
}

// int3 at CPL0 as the CPU runs it, on both host kinds: hardware KVM runs it directly;
// on a PVM host the emulator cannot, and sigvisor completes it as #BP (one exit).
x86::MachineReport BootAsTheCliDoes(const KvmSystem& kvm, const ElfImage& image,
                                    bool* cpl0_emulated) {
  absl::StatusOr<HostInfo> host = DetectHost(kvm);
  EXPECT_TRUE(host.ok()) << host.status();
  *cpl0_emulated = host.ok() && host->cpl0_emulated;
  x86::MachineConfig config;
  config.cpl0_emulated = *cpl0_emulated;
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, image, config);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : x86::MachineReport{};
}

TEST(Cpl0Test, Int3AtCpl0DeliversBreakpointWithRipPastIt) {
  SIGVISOR_REQUIRE_KVM(kvm);
  bool cpl0_emulated = false;
  x86::MachineReport report =
      BootAsTheCliDoes(*kvm, LoadTestGuest("int3_bp_delivered"), &cpl0_emulated);
  EXPECT_EQ(report.result.outcome, Outcome::kExited) << report.result.diagnosis;
  EXPECT_EQ(report.result.exit_code, 7);  // the handler saw RIP just past the int3
  EXPECT_EQ(CountDetail(report.result.ledger, "internal_error", "int3 at CPL0 completed as #BP"),
            cpl0_emulated ? 1u : 0u);
}

TEST(Cpl0Test, FwaitRunsAsOnTheCpu) {
  SIGVISOR_REQUIRE_KVM(kvm);
  bool cpl0_emulated = false;
  x86::MachineReport report = BootAsTheCliDoes(*kvm, LoadTestGuest("fwait_at_cpl0"), &cpl0_emulated);
  EXPECT_EQ(report.result.outcome, Outcome::kExited) << report.result.diagnosis;
  EXPECT_EQ(report.result.exit_code, 7);
  EXPECT_EQ(CountDetail(report.result.ledger, "internal_error", "fwait at CPL0 completed"),
            cpl0_emulated ? 1u : 0u);
}

TEST(FailureTest, Int3InTheKernelWithoutAnIdtIsATripleFault) {
  SIGVISOR_REQUIRE_KVM(kvm);
  // The boot IDT has limit 0: #BP cannot be delivered, nor #GP, nor #DF.
  bool cpl0_emulated = false;
  x86::MachineReport report =
      BootAsTheCliDoes(*kvm, LoadTestGuest("int3_in_kernel"), &cpl0_emulated);
  EXPECT_EQ(report.result.outcome, Outcome::kTripleFault) << OutcomeName(report.result.outcome);
}

TEST(FailureTest, WatchdogStopsASpinningGuest) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report =
      Boot(*kvm, LoadTestGuest("spin"), "", absl::Milliseconds(300));
  EXPECT_EQ(report.result.outcome, Outcome::kTimeout);
  EXPECT_NE(report.result.exit_code, 0);
  EXPECT_NE(report.result.diagnosis.find("rip 0x100000"), std::string::npos)
      << report.result.diagnosis;
}

TEST(FailureTest, PortWithNoDeviceIsReported) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, LoadTestGuest("no_device"), "");
  EXPECT_EQ(report.result.outcome, Outcome::kBadDeviceAccess);
  EXPECT_NE(report.result.diagnosis.find("no device at port 0x1234"), std::string::npos)
      << report.result.diagnosis;
  // The `outb %al, %dx` (ee) at _start+6, not the `hlt` (f4) after it, whichever way the
  // host reports it: PVM emulates the out at CPL0 and has moved rip past it by the
  // exit, hardware KVM leaves rip on it.
  ExpectWhere(*kvm, report.result, "rip 0x100006 (_start+0x6, cpl 0)", "bytes ee f4");
}

TEST(FailureTest, AbiMismatchIsRefusedBeforeBoot) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineConfig config;
  absl::StatusOr<x86::MachineReport> report =
      x86::BootAndRun(*kvm, LoadTestGuest("abi_mismatch"), config);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("ABI 999"), absl::string_view::npos);
}

TEST(FailureTest, BadMemorySizeIsRefused) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineConfig config;
  config.memory_bytes = 3ull << 20;
  EXPECT_FALSE(x86::BootAndRun(*kvm, BundledKernel(), config).ok());
  config.memory_bytes = 4ull << 30;
  EXPECT_FALSE(x86::BootAndRun(*kvm, BundledKernel(), config).ok());
}

}  // namespace
}  // namespace sigvisor
