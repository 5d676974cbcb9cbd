// Stock Linux under sigvisor: Debian's kernel (tools/setup.sh fetches and unpacks it;
// the hardware lane carries it in as $SIGVISOR_LINUX_KERNEL) boots to the embedded
// init, which runs every workload and the signal self-test in one boot, and the
// report says what the run measured (on the hardware lane: where CPL0 is emulated,
// init cannot make a system call, docs/guests.md). Bad kernels and initrds are
// refused before a vCPU runs, each in one line, on both lanes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/cli_test_support.h"
#include "tests/debian_kernel.h"
#include "tests/host_kind.h"
#include "tests/linux_exits_per_op.h"
#include "vmm/loader/linux/bzimage.h"
#include "vmm/loader/linux/bzimage_for_test.h"

namespace sigvisor {
namespace {

using ::sigvisor::testing::CpuLevelZeroEmulated;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::LinuxExitsPerOp;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;
namespace bz = ::sigvisor::linux_boot::testing;

std::string WriteFile(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
}

// A bzImage sigvisor loads, its payload a real ELF file (a test guest): for the
// refusals that come once the image is loaded, which need no Debian kernel.
std::string LoadableBzImage() {
  bz::Spec spec;
  spec.payload = bz::Gzip(ReadAll("tests/guests/exit_with"));
  return WriteFile("loadable.bzImage", bz::Build(spec));
}

TEST(LinuxKernelRefusedTest, BootProtocolTooOld) {
  bz::Spec spec;
  spec.version = 0x020b;
  ExpectOneLineError(Sigvisor("run --image " + WriteFile("old.bzImage", bz::Build(spec))),
                     "2.11");
}

TEST(LinuxKernelRefusedTest, ThirtyTwoBitOnlyKernel) {
  bz::Spec spec;
  spec.xloadflags = 0;
  ExpectOneLineError(Sigvisor("run --image " + WriteFile("x86.bzImage", bz::Build(spec))),
                     "32-bit");
}

TEST(LinuxKernelRefusedTest, UnsupportedCompressionIsNamed) {
  bz::Spec spec;
  spec.payload = {'B', 'Z', 'h', '9', 0x31, 0x41, 0x59, 0x26, 0x53, 0x59};
  ExpectOneLineError(Sigvisor("run --image " + WriteFile("bzip2.bzImage", bz::Build(spec))),
                     "bzip2");
}

TEST(LinuxKernelRefusedTest, NotABzImageNorAnElfFile) {
  ExpectOneLineError(Sigvisor("run --image " + WriteFile("text", {'h', 'i', '\n'})), "text");
}

TEST(LinuxKernelRefusedTest, InitrdOnlyForALinuxKernel) {
  ExpectOneLineError(Sigvisor("run --initrd " + WriteFile("initrd", {0})), "--initrd");
}

// Issue 30: a directory as --initrd ended in an uncaught std::__ios_failure, /dev/zero
// in memory growing without end. Refused before /dev/kvm is opened.
TEST(LinuxKernelRefusedTest, InitrdThatIsNotARegularFile) {
  const std::string kernel = LoadableBzImage();
  const std::string dir = TempPath("initrd.d");
  std::filesystem::create_directories(dir);
  ExpectOneLineError(Sigvisor("run --image " + kernel + " --initrd " + dir),
                     "--initrd: '" + dir + "' is a directory, not a regular file");
  ExpectOneLineError(Sigvisor("run --image " + kernel + " --initrd /dev/zero"),
                     "--initrd: '/dev/zero' is a character device, not a regular file");
}

// Issue 30: --inject with a bzImage was refused naming the gdb stub. Fault injection
// reads sigvisor's boot protocol: the refusal names --inject and the bundled kernel,
// before /dev/kvm is opened (--kvm names no device).
TEST(LinuxKernelRefusedTest, InjectIsForTheBundledKernel) {
  const sigvisor::testing::CommandResult r = Sigvisor(
      "run --kvm /nonexistent/kvm --image " + LoadableBzImage() + " --inject sig=usr1,op=1");
  ExpectOneLineError(r,
                     "--inject is for the bundled kernel: fault injection reads sigvisor's "
                     "boot protocol");
  EXPECT_EQ(r.err.find("gdb"), std::string::npos) << r.err;
  // --gdb is refused naming --gdb.
  ExpectOneLineError(
      Sigvisor("run --kvm /nonexistent/kvm --image " + LoadableBzImage() + " --gdb 127.0.0.1:0"),
      "--gdb: the gdb stub works on sigvisor images only");
}

TEST(LinuxKernelRefusedTest, InitrdThatDoesNotFitGuestMemory) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm";
  const std::string initrd = WriteFile("big.initrd", std::vector<uint8_t>(96u << 20, 0));
  ExpectOneLineError(Sigvisor("run --image " + kernel + " --memory 160 --initrd " + initrd),
                     "does not fit");
}

TEST(LinuxKernelRefusedTest, LinuxWorkloadNamesAreChecked) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  ExpectOneLineError(Sigvisor("run --image " + kernel + " --workload hello"),
                     "not a workload of the embedded Linux init");
}

// One boot of Debian's kernel: every workload with a few ops, then the self-test. On
// both host kinds: where CPL0 is emulated the boot takes 7-13 minutes (docs/guests.md).
TEST(LinuxGuestTest, DebianKernelRunsEveryWorkloadAndTheSelfTest) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm";
  if (const char* boot = std::getenv("SIGVISOR_LINUX_BOOT"); boot && std::string(boot) == "0") {
    GTEST_SKIP() << "SIGVISOR_LINUX_BOOT=0: the sanitizer passes leave the Linux boot to the "
                    "plain pass; the refusals above still run";
  }
  constexpr int kOps = 4;
  const testing::CommandResult r =
      Sigvisor("run --image " + kernel + " --workload all --ops " + std::to_string(kOps) +
               " --json --quiet --timeout 50m");
  ASSERT_EQ(r.status, 0) << r.err << r.out.substr(0, 4000);
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["outcome"], "exited");
  EXPECT_EQ(report["exit_code"], 0);
  EXPECT_NE(report["cmdline"].get<std::string>().find("sigvisor_workload=all sigvisor_ops=4"),
            std::string::npos);
  const std::string console = report["console"];
  EXPECT_NE(console.find("sigvisor init: exit status 0"), std::string::npos) << console;

  // Each workload's phase, sigvisor_repeats (5) times: the samples of one phase.
  constexpr int kSamples = 5;
  const std::vector<std::string> kNames = {"divzero", "sig_inst", "sig_hndl", "sigpingpong",
                                           "pipe_rw"};
  // Exits per op as linux_exits_per_op.h has them. sigpingpong's child waits in
  // sigsuspend around each marker, as the scheduler has it: the wait before the first
  // op may begin after BEGIN (one exit more), the one after the last op after END (one
  // fewer). Measured: 23, 24 and 25 exits for 4 ops.
  const bool cpl0_emulated = report["host"]["cpl0_emulated"];
  std::vector<std::string> names;
  for (const nlohmann::json& phase : report["phases"]) {
    const std::string name = phase["name"];
    names.push_back(name);
    EXPECT_EQ(phase["ops"], kOps) << name;
    const int exits = LinuxExitsPerOp(name, cpl0_emulated) * kOps;
    const int boundary = cpl0_emulated && name == "sigpingpong" ? 1 : 0;
    EXPECT_GE(phase["exits"]["total"], exits - boundary) << name;
    EXPECT_LE(phase["exits"]["total"], exits + boundary) << name;
    // Every one of them a completion (a debug exit); none at all on hardware KVM.
    EXPECT_EQ(phase["exits"]["by_reason"].value("debug", 0), phase["exits"]["total"]) << name;
  }
  std::vector<std::string> expected;
  for (const std::string& name : kNames) expected.insert(expected.end(), kSamples, name);
  EXPECT_EQ(names, expected);
  // The samples' spread per phase name: kernel instructions per op only where CPL0 is
  // emulated (the host's kind is the report's).
  ASSERT_EQ(report["phase_spread"].size(), kNames.size());
  for (const nlohmann::json& spread : report["phase_spread"]) {
    const std::string name = spread["name"];
    EXPECT_EQ(spread["samples"], kSamples) << name;
    const double exits = LinuxExitsPerOp(name, cpl0_emulated);
    const double boundary = cpl0_emulated && name == "sigpingpong" ? 1.0 / kOps : 0;
    EXPECT_GE(spread["per_op"]["exits"]["min"], exits - boundary) << name;
    EXPECT_LE(spread["per_op"]["exits"]["max"], exits + boundary) << name;
    EXPECT_EQ(spread["per_op"]["kernel_insns"].is_null(), !cpl0_emulated) << name;
  }
}

// The same kernel as an ELF vmlinux (the bzImage's payload, decompressed here), entered
// at its PVH note as QEMU and Firecracker enter one.
TEST(LinuxGuestTest, DebianVmlinuxBootsThroughItsPvhEntry) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm";
  if (CpuLevelZeroEmulated()) {
    GTEST_SKIP() << "a second Linux boot costs minutes where CPL0 is emulated; the bzImage "
                    "boot above covers everything after the entry on this host, and this test "
                    "runs on the hardware lane";
  }
  absl::StatusOr<linux_boot::BzImage> bz = linux_boot::ParseBzImage(ReadAll(kernel));
  ASSERT_TRUE(bz.ok()) << bz.status();
  const std::string vmlinux = WriteFile("vmlinux", bz->vmlinux);
  const testing::CommandResult r =
      Sigvisor("run --image " + vmlinux + " --workload divzero --ops 3 --json --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["outcome"], "exited");
  ASSERT_EQ(report["phases"].size(), 5u);  // init's sigvisor_repeats samples
  for (const nlohmann::json& phase : report["phases"]) {
    EXPECT_EQ(phase["name"], "divzero");
    EXPECT_EQ(phase["ops"], 3);
    EXPECT_EQ(phase["exits"]["total"], 0);
  }
}

// --block-phase-interrupts: Linux's timer ticks wait for each phase's END marker, so
// that no interrupt is injected inside a measured phase (KVM's own irq_injections
// count, per phase, is 0) and the run's JSON says so.
TEST(LinuxGuestTest, BlockedPhasesTakeNoInterrupt) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm";
  if (CpuLevelZeroEmulated()) {
    GTEST_SKIP() << "a second Linux boot costs minutes where CPL0 is emulated (a restore "
                    "needs a snapshot, one more boot); this test runs on the hardware lane";
  }
  // Enough ops that the unblocked phases take ticks at Debian's HZ=250 on the lane.
  const testing::CommandResult r = Sigvisor(
      "run --image " + kernel + " --workload divzero --ops 200 --block-phase-interrupts "
      "--json --quiet --timeout 20m");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["phase_interrupts"], "blocked");
  ASSERT_EQ(report["phases"].size(), 5u);
  for (const nlohmann::json& phase : report["phases"]) {
    EXPECT_EQ(phase["kvm_stats"].value("irq_injections", 0), 0) << phase.dump();
  }
  // The ticks were only delayed: the run as a whole took some.
  EXPECT_GT(report["kvm_stats"].value("irq_injections", 0), 0) << report["kvm_stats"].dump();
}

// `bench` with Debian's kernel as a build beside the bundled kernel's: one table, the
// Linux rows from a boot per run; where CPL0 is emulated, from a restore per run of the
// one snapshot the bench takes of each build (a Linux boot per run costs 7-13 minutes
// there, docs/snapshots.md "In a bench").
TEST(LinuxGuestTest, BenchPutsLinuxBesideTheBundledKernel) {
  SIGVISOR_REQUIRE_DEBIAN_KERNEL(kernel);
  if (!HaveKvm()) GTEST_SKIP() << "no /dev/kvm";
  if (const char* boot = std::getenv("SIGVISOR_LINUX_BOOT"); boot && std::string(boot) == "0") {
    GTEST_SKIP() << "SIGVISOR_LINUX_BOOT=0: the sanitizer passes leave the Linux boot to the "
                    "plain pass";
  }
  const bool cpl0_emulated = CpuLevelZeroEmulated();
  constexpr int kOps = 5;
  const testing::CommandResult r = Sigvisor("bench --variants 'baseline; linux=" + kernel +
                                            "' --workloads divzero --repetitions 1 "
                                            "--ops " +
                                            std::to_string(kOps) + " --json --timeout 20m" +
                                            (cpl0_emulated ? " --restore" : ""));
  ASSERT_EQ(r.status, 0) << r.err << r.out.substr(0, 4000);
  const nlohmann::json bench = nlohmann::json::parse(r.out);
  EXPECT_EQ(bench["complete"], true);
  EXPECT_EQ(bench["matrix"]["restored"], cpl0_emulated);
  EXPECT_EQ(bench["matrix"]["traps"], nlohmann::json::array({"off"}));  // a Linux build's default
  EXPECT_EQ(bench["matrix"]["memory_mib"], 160);
  const nlohmann::json& variants = bench["matrix"]["variants"];
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[0]["name"], "baseline");
  EXPECT_EQ(variants[1]["name"], "linux:" + std::filesystem::path(kernel).filename().string());
  EXPECT_GT(variants[1]["text_bytes"].get<uint64_t>(), variants[0]["text_bytes"].get<uint64_t>());
  // One divzero cell per build, each measured once. The bundled kernel's makes no exit
  // per op on either host; Linux's none where CPL0 runs directly (the signal's exception
  // and sigreturn stay inside the guest as the bundled kernel's do), its sigreturn's
  // SYSCALL completion where it is emulated.
  ASSERT_EQ(bench["cells"].size(), 2u);
  for (size_t v = 0; v < 2; ++v) {
    const nlohmann::json& cell = bench["cells"][v];
    EXPECT_EQ(cell["workload"], "divzero");
    EXPECT_EQ(cell["phase"], "divzero");
    EXPECT_EQ(cell["variant"], variants[v]["name"]);
    EXPECT_EQ(cell["ops"], kOps);
    EXPECT_EQ(cell["samples"], 1);
    EXPECT_EQ(cell["per_op"]["exits"], v == 0 ? 0 : LinuxExitsPerOp("divzero", cpl0_emulated))
        << cell["variant"];
  }
}

}  // namespace
}  // namespace sigvisor
