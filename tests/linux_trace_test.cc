// `sigvisor trace` on a stock Linux kernel: Debian's vmlinuz (as linux_guest_test finds
// it) with its System.map beside it (tools/unpack_kernel.sh takes the real one from the
// kernel's -dbg package; the hardware lane carries it in as /lane/System.map). The
// refusals run everywhere without a boot; the trace itself only where CPL0 runs
// directly, since a Linux boot costs minutes where it is emulated.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "arch/x86_64/vmm/probe/probe.h"
#include "nlohmann/json.hpp"
#include "tests/cli_test_support.h"
#include "tests/debian_kernel.h"
#include "vmm/kvm/kvm.h"

namespace sigvisor {
namespace {

using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;


// The System.map beside the kernel, if it is a real one (Debian's image package holds a
// one-line placeholder).
std::string SystemMapBeside(const std::string& kernel) {
  const std::filesystem::path map = std::filesystem::path(kernel).parent_path() / "System.map";
  std::ifstream in(map);
  int lines = 0;
  for (std::string line; lines < 2 && std::getline(in, line);) ++lines;
  return lines >= 2 ? map.string() : "";
}


TEST(LinuxTraceRefusedTest, ABadSystemMapIsOneLine) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  ExpectOneLineError(Sigvisor("trace --image " + kernel + " --symbols /nonexistent/System.map"),
                     "cannot read the System.map '/nonexistent/System.map'");
  const std::string placeholder = TempPath("System.map");
  std::ofstream(placeholder)
      << "ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n";
  ExpectOneLineError(Sigvisor("trace --image " + kernel + " --symbols " + placeholder),
                     "Debian's placeholder");
}

TEST(LinuxTraceRefusedTest, DiffIsForTheBundledKernel) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  ExpectOneLineError(Sigvisor("trace --image " + kernel + " --diff dr7=lazy"),
                     "--diff compares two builds of the bundled kernel");
}

TEST(LinuxTraceTest, OneDivzeroSignalIsProfiledByLinuxFunction) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm";
  const std::string map = SystemMapBeside(kernel);
  if (map.empty()) {
    GTEST_SKIP() << "no real System.map beside " << kernel
                 << ": put linux-image-VERSION-dbg in the lane cache and run "
                    "tools/unpack_kernel.sh";
  }
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
  ASSERT_TRUE(kvm.ok()) << kvm.status();
  absl::StatusOr<HostInfo> host = DetectHost(*kvm);
  ASSERT_TRUE(host.ok()) << host.status();
  if (host->cpl0_emulated) {
    GTEST_SKIP() << "where CPL0 is emulated the tracer's single step leaks to Linux's user "
                    "code as a #DB (steps stop the VMM at CPL0 only; docs/trace.md), and a "
                    "Linux boot costs ~10 minutes; this test runs on the hardware lane";
  }
  const testing::CommandResult r = Sigvisor("trace --image " + kernel + " --symbols " + map +
                                            " --workload divzero --ops 1 --json --timeout 600s");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json trace = nlohmann::json::parse(r.out);
  EXPECT_EQ(trace["complete"], true);
  std::set<std::string> functions;
  for (const nlohmann::json& row : trace["profile"]) functions.insert(row["function"]);
  // The #DE's entry and handler, the signal's generation and delivery, and sigreturn
  // entered through SYSCALL (a kernel-entry stop of its own on hardware KVM).
  for (const char* expected : {"asm_exc_divide_error", "exc_divide_error", "force_sig_fault",
                               "arch_do_signal_or_restart", "entry_SYSCALL_64", "do_syscall_64",
                               "restore_sigcontext"}) {
    EXPECT_TRUE(functions.contains(expected)) << expected << " not in the profile";
  }
}

}  // namespace
}  // namespace sigvisor
