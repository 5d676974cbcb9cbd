// `sigvisor trace` on a stock Linux kernel: Debian's vmlinuz (as linux_guest_test finds
// it), its functions named by the kernel's own kallsyms (vmm/loader/linux/kallsyms.h),
// or by a System.map the test writes for --symbols. The refusals run everywhere without
// a boot; the traces only where CPL0 runs directly, since a Linux boot costs minutes
// where it is emulated.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
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

// Where the trace of one divzero signal on Linux runs: on hardware KVM; on PVM only when
// asked (SIGVISOR_PVM_LINUX_TRACE=1), since each trace there boots Linux first.
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
  const char* asked = std::getenv("SIGVISOR_PVM_LINUX_TRACE");
  if (host->cpl0_emulated && (asked == nullptr || std::string(asked) != "1")) {
    *why_not =
        "where CPL0 is emulated every trace boots Linux first (7 to 12.5 minutes here, more "
        "than CI has for it); set SIGVISOR_PVM_LINUX_TRACE=1 to run it (docs/testing.md). It "
        "runs on the hardware lane";
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

TEST(LinuxTraceRefusedTest, DiffPutsTheBundledKernelFirst) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  ExpectOneLineError(Sigvisor("trace --image " + kernel + " --diff dr7=lazy"),
                     "--diff on a Linux kernel: put the bundled kernel first and Linux second");
  ExpectOneLineError(Sigvisor("trace --kvm /nonexistent/kvm --diff linux=/nonexistent/vmlinuz"),
                     "cannot open image '/nonexistent/vmlinuz'");
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

// Linux's stages of one op (vmm/trace/linux_stages.h), in the order a signal passes them.
std::vector<std::string> StageNames(const nlohmann::json& trace) {
  std::vector<std::string> names;
  for (const nlohmann::json& row : trace["stages"]) names.push_back(row["stage"]);
  return names;
}

uint64_t StageSum(const nlohmann::json& trace) {
  uint64_t sum = 0;
  for (const nlohmann::json& row : trace["stages"]) sum += row["kernel_insns"].get<uint64_t>();
  return sum;
}

// The command: Linux's stage table with no --symbols, every kernel instruction
// of the op in one of its stages.
TEST(LinuxTraceTest, StagesOfOneLinuxSignal) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  std::string why_not;
  if (!CanTraceLinux(&why_not)) GTEST_SKIP() << why_not;
  const testing::CommandResult r =
      Sigvisor("trace --image " + kernel + " --workload divzero --ops 1 --stages --timeout 600s");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("stages of op 1 (kernel instructions; Linux's functions by its stage "
                       "table"),
            std::string::npos)
      << r.out;
  for (const char* stage : {"exception entry", "die notifiers", "signal generation", "ucounts",
                            "dequeue", "frame setup", "FPU frame", "exit-to-user work",
                            "return to the handler", "handler (CPL3, opaque)", "sigreturn entry",
                            "sys_rt_sigreturn", "FPU frame restore", "sigreturn exit"}) {
    EXPECT_NE(r.out.find("\n  " + std::string(stage) + " "), std::string::npos) << stage;
  }
  EXPECT_EQ(r.out.find("  kernel entry "), std::string::npos) << "an unclassified span:\n" << r.out;
}

// `trace --diff linux=KERNEL`: the bundled kernel and Linux, one op each, stage by stage,
// for divzero and for sig_hndl (a kill() to itself: Linux's LSM hook).
TEST(LinuxTraceTest, TheModelBesideLinuxStageByStage) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  std::string why_not;
  if (!CanTraceLinux(&why_not)) GTEST_SKIP() << why_not;
  for (const std::string workload : {"divzero", "lat_sig --phase sig_hndl"}) {
    SCOPED_TRACE(workload);
    const testing::CommandResult r = Sigvisor(
        "trace --workload " + workload + " --ops 1 --json --timeout 600s --diff linux=" + kernel);
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["schema"], "sigvisor.trace-diff/1");
    EXPECT_EQ(doc["left"]["kernel"], "sigvisor");
    EXPECT_EQ(doc["right"]["kernel"], "linux");
    for (const char* side : {"left", "right"}) {
      EXPECT_EQ(StageSum(doc[side]), doc[side]["counts"]["per_op"][0].get<uint64_t>()) << side;
    }
    const std::vector<std::string> linux_stages = StageNames(doc["right"]);
    EXPECT_TRUE(std::find(linux_stages.begin(), linux_stages.end(), "kernel entry") ==
                linux_stages.end());
    bool dr7_row = false;
    for (const nlohmann::json& row : doc["diff"]["stages"]) {
      if (row["stage"] != "DR7 write") continue;
      dr7_row = true;
      EXPECT_GT(row["left"].get<uint64_t>(), 0u);  // the baseline's write
      EXPECT_EQ(row["right"], 0);                  // Linux 6.1 writes no DR7 on delivery
    }
    EXPECT_TRUE(dr7_row);
    EXPECT_TRUE(doc["diff"]["instructions"].is_null());
    if (workload != "divzero") {
      EXPECT_TRUE(std::find(linux_stages.begin(), linux_stages.end(), "LSM hook (AppArmor)") !=
                  linux_stages.end());
    }
  }
}

TEST(LinuxTraceRefusedTest, StudyLinuxTakesALinuxKernelForASeedStudy) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  ExpectOneLineError(Sigvisor("study dr7 --kvm /nonexistent/kvm --linux /nonexistent/vmlinuz"),
                     "cannot open image '/nonexistent/vmlinuz'");
  ExpectOneLineError(Sigvisor("study dr7 --kvm /nonexistent/kvm --linux tests/guests/exit_with"),
                     "--linux takes a Linux kernel");
  ExpectOneLineError(Sigvisor("study pvsig --kvm /nonexistent/kvm --linux " + kernel),
                     "pvsig has none");
}

// `study --linux`: each seed study gains a Linux column, counted from Linux's traced ops,
// and the model's own figures are those of a study without it.
TEST(LinuxTraceTest, EverySeedStudyHasALinuxColumn) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  std::string why_not;
  if (!CanTraceLinux(&why_not)) GTEST_SKIP() << why_not;
  const std::string study = "study dr7 pda cerr dequeue --ops 2 --repetitions 2 --traps off,patch";
  const testing::CommandResult with = Sigvisor(study + " --json --timeout 600s --linux " + kernel);
  ASSERT_EQ(with.status, 0) << with.err;
  const testing::CommandResult without = Sigvisor(study + " --json");
  ASSERT_EQ(without.status, 0) << without.err;
  const nlohmann::json a = nlohmann::json::parse(with.out);
  const nlohmann::json b = nlohmann::json::parse(without.out);
  ASSERT_EQ(a["studies"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const nlohmann::json& s = a["studies"][i];
    SCOPED_TRACE(s["name"].get<std::string>());
    ASSERT_TRUE(s["linux"].is_object());
    EXPECT_TRUE(s["linux"]["absent_why"].is_null()) << s["linux"]["absent_why"];
    EXPECT_GE(s["linux"]["figures"].size(), 3u);
    EXPECT_NE(s["text"].get<std::string>().find("Linux beside the model"), std::string::npos);
    EXPECT_TRUE(b["studies"][i]["linux"].is_null());
    // The model's exact figures (counts and sizes) as without the column.
    std::map<std::string, double> exact;
    for (const nlohmann::json& c : b["studies"][i]["comparisons"]) {
      if (c["exact"] == true)
        exact[c["metric"].get<std::string>() + c["phase"].dump() + c["trap"].dump()] = c["new"];
    }
    size_t compared = 0;
    for (const nlohmann::json& c : s["comparisons"]) {
      if (c["exact"] != true) continue;
      EXPECT_EQ(c["new"].get<double>(),
                exact.at(c["metric"].get<std::string>() + c["phase"].dump() + c["trap"].dump()))
          << c["metric"];
      ++compared;
    }
    EXPECT_GT(compared, 0u);
    // The builds counted alike beside Linux, each seed's change where it shows.
    EXPECT_TRUE(s["linux"]["builds_absent_why"].is_null()) << s["linux"]["builds_absent_why"];
    for (const nlohmann::json& f : s["linux"]["figures"]) {
      SCOPED_TRACE(f["label"].get<std::string>());
      ASSERT_TRUE(f["old"].is_number() && f["new"].is_number());
      const double old_value = f["old"], new_value = f["new"], linux_value = f["linux"];
      if (f["metric"] == "kernel_insns_per_op") EXPECT_GT(linux_value, 2 * old_value);
      if (f["metric"] == "dr7_writes_per_op") {
        EXPECT_EQ(old_value, 1);  // dr7=always
        EXPECT_EQ(new_value, 0);  // dr7=lazy
        EXPECT_EQ(linux_value, 0);
      }
      if (f["metric"] == "gs_prefixed_per_op") {
        EXPECT_LT(new_value, old_value);  // pda=direct
        EXPECT_GT(linux_value, 0);
      }
      if (f["metric"] == "frame_setup_insns_per_op") EXPECT_LT(new_value, old_value);  // cerr
      if (f["metric"] == "dequeue_insns_per_op") EXPECT_GT(linux_value, 0);
    }
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
