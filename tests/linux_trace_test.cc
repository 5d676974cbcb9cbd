// `sigvisor trace` on a stock Linux kernel: Debian's vmlinuz (as linux_guest_test finds
// it), its functions named by the kernel's own kallsyms (vmm/loader/linux/kallsyms.h),
// or by a System.map the test writes for --symbols. The refusals run everywhere without
// a boot; the traces only where CPL0 runs directly, since a Linux boot costs minutes
// where it is emulated.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "nlohmann/json.hpp"
#include "tests/cli_test_support.h"
#include "tests/debian_kernel.h"
#include "vmm/kvm/kvm.h"
#include "vmm/loader/linux/bzimage.h"
#include "vmm/loader/linux/bzimage_for_test.h"
#include "vmm/loader/linux/kallsyms.h"

namespace sigvisor {
namespace {

using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
}

std::string WriteFile(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path;
}

// A bzImage whose vmlinux has neither ELF symbols nor kallsyms: a test guest with its
// section headers (and so its symbol table) cut off, as `strip --strip-section-headers`
// would.
std::string BzImageWithoutSymbols() {
  std::vector<uint8_t> elf = ReadAll("tests/guests/exit_with");
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof(eh));
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  std::memcpy(elf.data(), &eh, sizeof(eh));
  linux_boot::testing::Spec spec;
  spec.payload = linux_boot::testing::Gzip(elf);
  return WriteFile("stripped.bzImage", linux_boot::testing::Build(spec));
}

// Where the trace of one divzero signal on Linux may run: on hardware KVM only.
bool CanTraceLinux(std::string* why_not) {
  if (!HaveKvm()) {
    *why_not = "no /dev/kvm";
    return false;
  }
  absl::StatusOr<KvmSystem> kvm = KvmSystem::Open();
  absl::StatusOr<HostInfo> host = kvm.ok() ? DetectHost(*kvm) : kvm.status();
  if (!host.ok()) {
    *why_not = std::string(host.status().message());
    return false;
  }
  if (host->cpl0_emulated) {
    *why_not =
        "where CPL0 is emulated the tracer's single step leaks to Linux's user code as a #DB "
        "(steps stop the VMM at CPL0 only; docs/trace.md), and a Linux boot costs ~10 "
        "minutes; this test runs on the hardware lane";
    return false;
  }
  return true;
}

// The functions of one divzero signal's profile (`trace --json`).
std::set<std::string> ProfiledFunctions(const std::string& kernel, const std::string& flags) {
  const testing::CommandResult r = Sigvisor("trace --image " + kernel + flags +
                                            " --workload divzero --ops 1 --json --timeout 600s");
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return {};
  const nlohmann::json trace = nlohmann::json::parse(r.out);
  EXPECT_EQ(trace["complete"], true);
  std::set<std::string> functions;
  for (const nlohmann::json& row : trace["profile"]) functions.insert(row["function"]);
  return functions;
}

// The #DE's entry and handler, the signal's generation and delivery, and sigreturn
// entered through SYSCALL (a kernel-entry stop of its own on hardware KVM).
constexpr const char* kSignalPath[] = {
    "asm_exc_divide_error", "exc_divide_error", "force_sig_fault",   "arch_do_signal_or_restart",
    "entry_SYSCALL_64",     "do_syscall_64",    "restore_sigcontext"};

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

// Without kallsyms (and without ELF symbols) a kernel's functions have no names: refused
// in one line before /dev/kvm is opened, pointing at --symbols; with --symbols the same
// image gets as far as opening /dev/kvm (--kvm names no device: that is the error).
TEST(LinuxTraceRefusedTest, AKernelWithoutKallsymsIsOneLine) {
  const std::string image = BzImageWithoutSymbols();
  const testing::CommandResult r = Sigvisor("trace --kvm /nonexistent/kvm --image " + image);
  ExpectOneLineError(r,
                     "vmlinux: no kallsyms tables found (a kernel built without "
                     "CONFIG_KALLSYMS?): pass --symbols System.map");
  const std::string map = TempPath("small.System.map");
  std::ofstream(map) << "0000000000100000 T _start\n";
  ExpectOneLineError(
      Sigvisor("trace --kvm /nonexistent/kvm --image " + image + " --symbols " + map),
      "/nonexistent/kvm");
}

TEST(LinuxTraceTest, OneDivzeroSignalIsProfiledByLinuxFunction) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  std::string why_not;
  if (!CanTraceLinux(&why_not)) GTEST_SKIP() << why_not;
  // No --symbols: Debian's vmlinux is stripped, and the names are its kallsyms'.
  const std::set<std::string> functions = ProfiledFunctions(kernel, "");
  for (const char* expected : kSignalPath) {
    EXPECT_TRUE(functions.contains(expected)) << expected << " not in the profile";
  }
}

// --symbols still names the code, over the kernel's kallsyms: a map written here from
// those kallsyms with every name prefixed, so each name in the profile says which table
// it came from.
TEST(LinuxTraceTest, ASystemMapOverridesKallsyms) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  std::string why_not;
  if (!CanTraceLinux(&why_not)) GTEST_SKIP() << why_not;
  absl::StatusOr<linux_boot::BzImage> bz = linux_boot::ParseBzImage(ReadAll(kernel));
  ASSERT_TRUE(bz.ok()) << bz.status();
  absl::StatusOr<std::vector<linux_boot::KallsymsSymbol>> symbols =
      linux_boot::DecodeKallsyms(bz->vmlinux);
  ASSERT_TRUE(symbols.ok()) << symbols.status();
  const std::string map = TempPath("kallsyms.System.map");
  {
    std::ofstream out(map);
    for (const linux_boot::KallsymsSymbol& s : *symbols) {
      out << absl::StrFormat("%016x %c map_%s\n", s.addr, s.type, s.name);
    }
  }
  const std::set<std::string> functions = ProfiledFunctions(kernel, " --symbols " + map);
  for (const char* expected : kSignalPath) {
    EXPECT_TRUE(functions.contains(std::string("map_") + expected))
        << "map_" << expected << " not in the profile";
    EXPECT_FALSE(functions.contains(expected)) << expected << " named by kallsyms, not the map";
  }
}

}  // namespace
}  // namespace sigvisor
