// The sigvisor binary end to end: bad input gets one clear line on stderr and a
// non-zero status; --json is one parseable document with the documented fields.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Lines;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::TempPath;

// The exit status rule (vmm/app/cli/exit_status.h, docs/cli.md).
constexpr int kGuestStatusAbove122 = 123;
constexpr int kGuestFailed = 124;
constexpr int kSigvisorFailed = ::sigvisor::testing::kSigvisorFailed;

// The names in "(give one of: a, b, c; ...)" or "(known: a b c)": a workload list.
std::set<std::string> NamesIn(const std::string& text, const std::string& after,
                              const std::string& separators, char end) {
  std::set<std::string> names;
  const size_t start = text.find(after);
  if (start == std::string::npos) return names;
  const size_t stop = text.find(end, start);
  std::string name;
  for (char c : text.substr(start + after.size(), stop - start - after.size())) {
    if (separators.find(c) != std::string::npos) {
      if (!name.empty()) names.insert(name);
      name.clear();
    } else {
      name += c;
    }
  }
  if (!name.empty()) names.insert(name);
  return names;
}

TEST(CliTest, MissingImageFile) {
  ExpectOneLineError(Sigvisor("run --image /nonexistent/guest.elf"),
                     "cannot open image '/nonexistent/guest.elf'");
}

// A directory was read as a read error, and /dev/zero for 256 MiB before the cap
// stopped it; neither is opened now.
TEST(CliTest, ImageThatIsNotARegularFile) {
  const std::string dir = TempPath("image.d");
  std::filesystem::create_directories(dir);
  ExpectOneLineError(Sigvisor("run --image " + dir),
                     "image '" + dir + "' is a directory, not a regular file");
  ExpectOneLineError(Sigvisor("run --image /dev/zero"),
                     "image '/dev/zero' is a character device, not a regular file");
  ExpectOneLineError(Sigvisor("run --arch mips --image /dev/zero"),
                     "image '/dev/zero' is a character device, not a regular file");
}

TEST(CliTest, NotAnElf) {
  const std::string path = TempPath("notes.txt");
  std::ofstream(path) << "this is not an ELF file\n";
  ExpectOneLineError(Sigvisor("run --image " + path), "not an ELF file");
}

TEST(CliTest, ElfForAnotherMachine) {
  // A minimal ELF64 header for AArch64 (e_machine 183), nothing else.
  std::vector<unsigned char> header(64, 0);
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::copy(std::begin(ident), std::end(ident), header.begin());
  header[16] = 2;    // ET_EXEC
  header[18] = 183;  // EM_AARCH64
  header[20] = 1;    // EV_CURRENT
  header[52] = 64;   // e_ehsize
  const std::string path = TempPath("aarch64.elf");
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(header.data()), header.size());
  ExpectOneLineError(Sigvisor("run --image " + path), "AArch64");
}

TEST(CliTest, AbiMismatch) {
  ExpectOneLineError(Sigvisor("run --image tests/guests/abi_mismatch"), "ABI 999");
}

TEST(CliTest, MissingKvmDevice) {
  ExpectOneLineError(Sigvisor("run --kvm /nonexistent/kvm"), "does not exist");
}

TEST(CliTest, KvmPathThatIsNotKvm) {
  ExpectOneLineError(Sigvisor("run --kvm /dev/null"), "/dev/null");
}

TEST(CliTest, BadFlagValues) {
  ExpectOneLineError(Sigvisor("run --ops lots"), "--ops 'lots'");
  ExpectOneLineError(Sigvisor("run --timeout 0s"), "--timeout");
  ExpectOneLineError(Sigvisor("frobnicate"), "unknown command 'frobnicate'");
  ExpectOneLineError(Sigvisor("probe --workload console"), "--workload");
  ExpectOneLineError(Sigvisor("run --frobs 3"), "unknown flag --frobs");
  ExpectOneLineError(Sigvisor("run --memory 3"), "guest memory of 3 MiB");
  ExpectOneLineError(Sigvisor("run extra"), "no argument 'extra'");
  ExpectOneLineError(Sigvisor("run --memory lots"), "--memory 'lots'");
  ExpectOneLineError(Sigvisor("run --timeout soon"), "--timeout 'soon'");
}

// Item: a bare number is seconds, as timeout(1) takes it (Abseil refused `--timeout 20`
// as an illegal value); the MIPS interpreter needs no KVM.
TEST(CliTest, ATimeoutIsABareNumberOfSeconds) {
  for (const char* timeout : {"20", "500ms", "10s", "2m"}) {
    CommandResult r = Sigvisor(std::string("run --arch mips --workload hello --ops 1 --quiet --timeout ") +
                               timeout);
    EXPECT_EQ(r.status, 0) << timeout << ": " << r.err;
  }
}

// Item: a flag of another architecture or mode is refused where it does not apply, in
// one line, as --vcpus and --module are, rather than ignored.
TEST(CliTest, FlagsOfAnotherArchOrModeAreRefused) {
  ExpectOneLineError(Sigvisor("run --cores 4"), "--cores is for the MIPS interpreter");
  ExpectOneLineError(Sigvisor("run --workload hello --cores=2"), "`sigvisor run --arch mips` only");
  for (const char* flag : {"--trap patch", "--kvm /dev/kvm", "--gdb 1234", "--irqchip",
                           "--vcpus 2", "--inject sig=usr1,op=1", "--seed 3", "--module m"}) {
    ExpectOneLineError(Sigvisor(std::string("run --arch mips ") + flag),
                       "is for x86-64 guests under KVM; it does not apply to `sigvisor run --arch "
                       "mips`");
  }
  for (const char* flag : {"--phase sig_hndl", "--stages", "--diff dr7=lazy"}) {
    ExpectOneLineError(Sigvisor(std::string("run ") + flag), "does not apply to `sigvisor run`");
  }
  ExpectOneLineError(Sigvisor("study dr7 --cores 8"), "--cores is for study tramp");
  for (const char* flag : {"--kvm /dev/kvm", "--memory 64", "--seed 2", "--traps off"}) {
    ExpectOneLineError(Sigvisor(std::string("study tramp ") + flag),
                       "is for the KVM studies; study tramp runs on the MIPS interpreter");
  }
}

// Issue 30: `trace --symbols MAP` on the bundled kernel replaced its own symbols with the
// map's and ruined the profile in silence. Refused in one line before /dev/kvm is opened
// (--kvm names no device: an attempt to open it would be the error instead).
TEST(CliTest, SymbolsAreForALinuxKernelWithoutItsOwn) {
  const std::string map = TempPath("System.map");
  std::ofstream(map) << "ffffffff81000000 T _stext\nffffffff81000100 T exc_divide_error\n";
  for (const char* image : {"", " --variant accelerated", " --image tests/guests/exit_with"}) {
    const CommandResult r =
        Sigvisor(std::string("trace --kvm /nonexistent/kvm --symbols ") + map + image);
    ExpectOneLineError(r, "--symbols is for a Linux kernel without symbols of its own");
    EXPECT_NE(r.err.find("not a Linux kernel"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("leave --symbols out"), std::string::npos) << r.err;
  }
}

// Item: a guest whose console output does not end its last line does not leave
// sigvisor's report (or, with --json, what follows on stderr) on that line.
TEST(CliTest, TheReportStartsOnALineOfItsOwn) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult text = Sigvisor("run --image tests/guests/exit_with --ops 3");
  EXPECT_EQ(text.status, 3) << text.err;
  EXPECT_EQ(text.out.rfind("xxx\nsigvisor: ", 0), 0u) << text.out;
  CommandResult json = Sigvisor("run --image tests/guests/exit_with --ops 3 --json");
  EXPECT_EQ(json.status, 3) << json.err;
  EXPECT_EQ(json.err, "xxx\n");
  EXPECT_EQ(nlohmann::json::parse(json.out)["console"], "xxx");
}

TEST(CliTest, HelpTeachesEachCommand) {
  CommandResult overview = Sigvisor("help");
  EXPECT_EQ(overview.status, 0);
  EXPECT_NE(overview.out.find("run"), std::string::npos);
  EXPECT_NE(overview.out.find("probe"), std::string::npos);
  CommandResult run = Sigvisor("run --help");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.out.find("--workload"), std::string::npos);
  EXPECT_NE(run.out.find("--timeout"), std::string::npos);
  EXPECT_EQ(run.out.find("--iterations"), std::string::npos);  // probe's, not run's
}

TEST(CliTest, GuestFailureIsOneLineOnStderrAndItsOwnStatus) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image tests/guests/triple_fault");
  EXPECT_EQ(r.status, kGuestFailed);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("triple_fault"), std::string::npos) << r.err;
  if (r.err.find("reset the vCPU at the shutdown") != std::string::npos) {
    // Where the host's KVM resets the vCPU at a shutdown (AMD SVM), the place is
    // lost, and the line says so; a PVM host keeps it.
    CommandResult probe = Sigvisor("probe --json --iterations 1 --repeats 1");
    ASSERT_EQ(probe.status, 0) << probe.err;
    EXPECT_EQ(nlohmann::json::parse(probe.out)["host_kind"], "hardware") << r.err;
  } else {
    EXPECT_NE(r.err.find("crash_here"), std::string::npos) << r.err;
  }
}

TEST(CliTest, TimeoutIsReported) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --image tests/guests/spin --timeout 200ms");
  EXPECT_EQ(r.status, kGuestFailed);
  EXPECT_NE(r.err.find("timeout"), std::string::npos) << r.err;
}

TEST(CliTest, RunPrintsConsoleAndExitTable) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --ops 4");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("sigvisor guest: 4 ops of each workload"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exits by reason"), std::string::npos) << r.out;
  for (const char* phase : {"divzero", "sig_inst", "sig_hndl", "sigpingpong", "pipe_rw"}) {
    EXPECT_NE(r.out.find(std::string("phase ") + phase + " (4 ops)"), std::string::npos)
        << phase << "\n" << r.out;
  }
}

TEST(CliTest, JsonHasTheDocumentedFields) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --workload console --ops 4 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);  // stdout is only the document
  EXPECT_EQ(doc["schema"], "sigvisor.run/2");
  EXPECT_EQ(doc["image"], "kernel baseline (embedded)");
  EXPECT_EQ(doc["variant"]["name"], "baseline");
  EXPECT_EQ(doc["variant"]["settings"], "dr7=always pda=gs uaccess=err_or dequeue=copy");
  EXPECT_EQ(doc["exit_code"], 0);
  EXPECT_EQ(doc["outcome"], "exited");
  EXPECT_TRUE(doc["host"]["kind"] == "pvm" || doc["host"]["kind"] == "hardware");
  EXPECT_TRUE(doc["host"]["cpl0_emulated"].is_boolean());
  EXPECT_GE(doc["exits"]["total"].get<int>(), 4);
  EXPECT_TRUE(doc["exits"]["by_reason"].contains("io"));
  EXPECT_TRUE(doc["kvm_stats"].contains("exits"));
  EXPECT_TRUE(doc["wall_ns"].is_number());
  ASSERT_EQ(doc["phases"].size(), 1u);
  const nlohmann::json& phase = doc["phases"][0];
  EXPECT_EQ(phase["name"], "console");
  EXPECT_EQ(phase["ops"], 4);
  EXPECT_EQ(phase["exits"]["total"], 4);
  EXPECT_EQ(phase["per_op"]["exits"], 1.0);
  EXPECT_TRUE(phase["per_op"].contains("kernel_insns"));
  // A time is a number where it was measured, and null (with a warning) where the
  // markers' calibration swallowed it: never a silent 0.
  if (phase["time_status"] == "measured") {
    EXPECT_TRUE(phase["per_op"]["tsc_cycles"].is_number());
    EXPECT_TRUE(phase["per_op"]["ns"].is_number());
  } else {
    EXPECT_EQ(phase["time_status"], "below_calibration_noise");
    EXPECT_TRUE(phase["per_op"]["ns"].is_null());
    EXPECT_FALSE(doc["warnings"].empty());
  }
  EXPECT_TRUE(phase["kvm_stats"].is_object());
  // The console went to stderr and into the document, not into stdout's JSON.
  EXPECT_NE(r.err.find("console line"), std::string::npos);
  EXPECT_NE(doc["console"].get<std::string>().find("console line"), std::string::npos);
}

TEST(CliTest, ProbeReportsThisHost) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("probe --json --iterations 20 --repeats 1");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["host_kind"] == "pvm" || doc["host_kind"] == "hardware");
  EXPECT_FALSE(doc["mechanisms"].empty());
}

// Item: a workload the bundled kernel does not have is refused before a VM exists,
// as bench refuses it, instead of booting a guest that exits 127.
TEST(CliTest, AnUnknownWorkloadIsRefusedInOneLine) {
  for (const char* command : {"run", "trace"}) {
    CommandResult r = Sigvisor(std::string(command) + " --workload nope");
    ExpectOneLineError(r, "--workload 'nope' is not a workload of the bundled kernel");
    EXPECT_EQ(r.out, "") << command;  // nothing booted, nothing reported
    EXPECT_NE(r.err.find("divzero"), std::string::npos) << r.err;
  }
  ExpectOneLineError(Sigvisor("run --arch mips --workload nope"), "--workload 'nope'");
}

// Item: --warmup is refused where it means nothing, before a VM exists: a workload
// without warm-up ops, zero (the first op must stay unmeasured), a non-count.
TEST(CliTest, AWarmupTheWorkloadCannotTakeIsRefusedInOneLine) {
  for (const char* command : {"run --workload hello --warmup 3",
                              "bench --workloads divzero,console --warmup 3"}) {
    CommandResult r = Sigvisor(command);
    ExpectOneLineError(r, "--warmup: workload '");
    EXPECT_NE(r.err.find("runs no warm-up ops"), std::string::npos) << command << r.err;
    EXPECT_EQ(r.out, "") << command;
  }
  ExpectOneLineError(Sigvisor("run --workload divzero --warmup 0"), "--warmup '0' is not a count");
  ExpectOneLineError(Sigvisor("bench --warmup lots"), "--warmup 'lots' is not a count");
  ExpectOneLineError(Sigvisor("run --arch mips --workload console --warmup 2"),
                     "--warmup: workload 'console'");
}

// --warmup rounds of sigpingpong: the child answers each (its own count includes them,
// so it exits 0 only if the parent sent exactly as many), and the phase holds the
// measured rounds alone.
TEST(CliTest, WarmupRoundsRunBeforeThePhase) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult r = Sigvisor("run --quiet --json --workload sigpingpong --ops 3 --warmup 4");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["cmdline"], "workload=sigpingpong ops=3 warmup=4");
  ASSERT_EQ(doc["phases"].size(), 1u);
  EXPECT_EQ(doc["phases"][0]["name"], "sigpingpong");
  EXPECT_EQ(doc["phases"][0]["ops"], 3);
  EXPECT_EQ(doc["console"].get<std::string>().find("FAIL"), std::string::npos) << doc["console"];
}

// The CLI's list is the guest's own: the kernel's init names what it knows when it
// is asked for something else (--cmdline passes the word unchecked).
TEST(CliTest, TheWorkloadsTheCliAcceptsAreTheGuests) {
  const std::set<std::string> cli =
      NamesIn(Sigvisor("run --workload nope").err, "give one of: ", ", ", ';');
  ASSERT_GE(cli.size(), 8u);
  CommandResult mips = Sigvisor("run --arch mips --cmdline workload=nope --quiet --json");
  EXPECT_EQ(mips.status, kGuestStatusAbove122) << mips.err;
  const nlohmann::json doc = nlohmann::json::parse(mips.out);
  EXPECT_EQ(doc["exit_code"], 127);  // init's "not found"
  const std::string console = doc["console"];
  EXPECT_EQ(NamesIn(console, "(known: ", " ", ')'), cli) << console;
}

// Item: the exit status tells sigvisor's failure, the guest's failure and the guest's
// own status apart.
TEST(CliTest, TheExitStatusSaysWhoFailed) {
  // sigvisor failed: bad input, before anything runs.
  ExpectOneLineError(Sigvisor("run --ops lots"), "--ops");
  EXPECT_EQ(Sigvisor("").status, kSigvisorFailed);
  // The rule is in the help.
  const std::string help = Sigvisor("help").out;
  for (const char* line : {"0-122  run, trace: the guest exited with this status",
                           "123    run, trace: the guest exited with a status above 122",
                           "124    run, trace: the guest failed", "125    sigvisor failed"}) {
    EXPECT_NE(help.find(line), std::string::npos) << line << "\n" << help;
  }
  // The guest's own status, 0 to 122, passes through; the MIPS interpreter needs no KVM.
  EXPECT_EQ(Sigvisor("run --arch mips --workload hello --ops 1 --quiet").status, 0);
  // Killed by SIGFPE: 128 + 8 would read as sigvisor dying of SIGFPE.
  CommandResult fault = Sigvisor("run --arch mips --workload fault --quiet --json");
  EXPECT_EQ(fault.status, kGuestStatusAbove122) << fault.err;
  EXPECT_EQ(nlohmann::json::parse(fault.out)["exit_code"], 136);
  EXPECT_NE(fault.err.find("sigvisor: the guest exited with status 136 (128 + 8: signal 8, SIGFPE, "
                           "killed its init); sigvisor exits with 123"),
            std::string::npos)
      << fault.err;
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  EXPECT_EQ(Sigvisor("run --image tests/guests/exit_with --quiet").status, 3);
  EXPECT_EQ(Sigvisor("run --workload fault --quiet").status, kGuestStatusAbove122);
  EXPECT_EQ(Sigvisor("run --image tests/guests/triple_fault --quiet").status, kGuestFailed);
}

// "boot" ends at the kernel's orders call, before it loads init: the same kernel
// instructions whatever the workload does first (each runs a warm-up op before its first
// phase marker).
TEST(CliTest, BootIsTheKernelsOwnWhateverTheWorkload) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  std::set<uint64_t> boot_insns;
  // Names of one length: boot does not read the command line (its orders come at its
  // end), but were it to copy it, one length keeps the counts comparable.
  for (const char* workload : {"divzero", "lat_sig", "pipe_rw", "console"}) {
    CommandResult r = Sigvisor(std::string("run --quiet --json --ops 2 --workload ") + workload);
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    ASSERT_TRUE(doc["timing"]["boot_ns"].is_number()) << workload;
    if (!doc["host"]["cpl0_emulated"].get<bool>()) {
      GTEST_SKIP() << "this host does not count kernel instructions (CPL0 runs natively)";
    }
    boot_insns.insert(doc["timing"]["boot_kvm_stats"]["insn_emulation"].get<uint64_t>());
  }
  EXPECT_EQ(boot_insns.size(), 1u) << "boot instructions differ by workload";
}

// Item: `images` lists --variant values, and the messages say so.
TEST(CliTest, ImagesAreVariantsAndTheMessagesSaySo) {
  const std::string help = Sigvisor("help images").out;
  EXPECT_EQ(help.find("usable as --image NAME"), std::string::npos) << help;
  EXPECT_NE(help.find("They are --variant values, not --image names"), std::string::npos) << help;
  const std::string listing = Sigvisor("images").out;
  EXPECT_NE(listing.find("(--image kernel, the default), by --variant:"), std::string::npos)
      << listing;
  ExpectOneLineError(Sigvisor("run --image baseline"),
                     "'baseline' is a build of the bundled kernel: give --variant baseline");
  CommandResult missing = Sigvisor("run --image /nonexistent/guest.elf");
  EXPECT_EQ(missing.err.find("embedded image name"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("`sigvisor images` lists as --variant values"), std::string::npos)
      << missing.err;
}

TEST(CliTest, HelpSpellsAOneLetterFlagAsItIsTyped) {
  const std::string help = Sigvisor("help image").out;
  EXPECT_NE(help.find("\n  -o "), std::string::npos) << help;
  EXPECT_EQ(help.find("--o "), std::string::npos) << help;
}

TEST(CliTest, StudyNamesEveryStudyItHas) {
  for (const char* args : {"study nope", "study"}) {
    CommandResult r = Sigvisor(args);
    ExpectOneLineError(r, "dr7, pda, cerr, dequeue, pvsig, ipi, all, or tramp");
  }
}

// An image for the other architecture gets the --arch that fits it.
TEST(CliTest, AnImageOfTheOtherArchitectureSaysWhichArch) {
  const std::string mips = TempPath("mips-kernel.elf"), x86 = TempPath("x86-kernel.elf");
  ASSERT_EQ(Sigvisor("image --arch mips -o " + mips).status, 0);
  ASSERT_EQ(Sigvisor("image -o " + x86).status, 0);
  ExpectOneLineError(Sigvisor("run --image " + mips),
                     "it is a MIPS image: `sigvisor run --arch mips` boots it");
  ExpectOneLineError(Sigvisor("sites --image " + mips), "it is a MIPS image");
  ExpectOneLineError(Sigvisor("run --arch mips --image " + x86), "it is an x86 image: drop --arch mips");
}

// Item: --version, and the same version and commit in every JSON document.
TEST(CliTest, VersionNamesTheVersionAndTheCommit) {
  CommandResult r = Sigvisor("--version");
  ASSERT_EQ(r.status, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(r.out, m,
                               std::regex("sigvisor ([0-9]+\\.[0-9]+\\.[0-9]+) \\(commit "
                                          "([0-9a-f]{40}|unknown)(, with uncommitted changes)?\\)\n")))
      << r.out;
  EXPECT_EQ(Sigvisor("run --version").out, r.out);  // with any command: it runs nothing
  const nlohmann::json images = nlohmann::json::parse(Sigvisor("images --json").out);
  EXPECT_EQ(images["sigvisor"]["version"], m[1].str());
  EXPECT_EQ(images["sigvisor"]["commit"], m[2].str());
  EXPECT_EQ(images["sigvisor"]["tree_modified"],
            m[2] == "unknown" ? nlohmann::json(nullptr) : nlohmann::json(m[3].matched));
}

// Issue 30: a result written to a full disk was lost with status 0 and no word. Now
// stdout is flushed, closed and checked at the end: one line naming what was lost and
// the errno's text, and status 125 (sigvisor failed), whatever the command would
// have exited with otherwise.
TEST(CliTest, AResultThatCannotBeWrittenIsAnErrorNotASilentZero) {
  if (!::sigvisor::testing::HaveDevFull()) GTEST_SKIP() << "no /dev/full here";
  const struct {
    const char* args;
    const char* what;
  } cases[] = {
      {"images", "the output of `sigvisor images`"},
      {"images --json", "the output of `sigvisor images`"},
      {"sites", "the output of `sigvisor sites`"},
      {"sites --json", "the output of `sigvisor sites`"},
      {"help", "the help"},
      {"help run", "the help"},
      {"run --help", "the help"},
      {"--version", "the version line"},
      // The MIPS interpreter needs no KVM; the report is small (one flush at the end),
      // the JSON larger than stdout's buffer (a write fails mid-output).
      {"run --arch mips --workload hello", "the output of `sigvisor run`"},
      {"run --arch mips --workload hello --quiet", "the output of `sigvisor run`"},
      {"run --arch mips --workload hello --json", "the output of `sigvisor run`"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const CommandResult r = ::sigvisor::testing::SigvisorWithStdout(c.args, "/dev/full");
    EXPECT_EQ(r.status, kSigvisorFailed) << r.err;
    // --json sends the guest's console to stderr: the error is the last line.
    const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
    EXPECT_EQ(last, std::string("sigvisor: error: stdout: ") + c.what +
                        " was not written: No space left on device\n")
        << r.err;
    if (std::string(c.args).find("--json") == std::string::npos) {
      EXPECT_EQ(Lines(r.err), 1) << r.err;
    }
  }
  // The same commands with stdout that takes the writes: status 0, nothing on stderr.
  const CommandResult ok = Sigvisor("run --arch mips --workload hello --json");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NO_THROW(static_cast<void>(nlohmann::json::parse(ok.out)));
  // A stdout that was never open, written to: the same (coreutils' rule: nothing
  // written to a closed stdout is no loss, but `images` writes).
  const CommandResult closed = ::sigvisor::testing::SigvisorWithStdout("images", "&-");
  EXPECT_EQ(closed.status, kSigvisorFailed) << closed.err;
  EXPECT_NE(closed.err.find("stdout: the output of `sigvisor images` was not written: Bad file "
                            "descriptor"),
            std::string::npos)
      << closed.err;
}

// Issue 30, "silent contradictions": a --variant key given twice with different
// values booted one of them; now neither.
TEST(CliTest, AVariantKeyGivenTwiceIsRefused) {
  CommandResult r = Sigvisor("run --variant dr7=lazy,dr7=always");
  ExpectOneLineError(r, "--variant 'dr7=lazy,dr7=always': dr7 is given twice, as lazy and as "
                        "always: give one");
  EXPECT_EQ(r.out, "");
  ExpectOneLineError(Sigvisor("run --arch mips --variant tramp=vdso,tramp=stack"),
                     "tramp is given twice, as vdso and as stack");
  // Once is an override; the same value twice says one thing.
  EXPECT_EQ(Sigvisor("image --variant accelerated,dr7=always,dr7=always -o " +
                     TempPath("twice.elf"))
                .status,
            0);
}

// Issue 30: --cmdline ops=abc fell back to the kernel's 16 ops, and --ops 3 with
// --cmdline ops=7 put both on the guest's line.
TEST(CliTest, ACmdlineWordThatContradictsAFlagIsRefused) {
  for (const char* arch : {"", "--arch mips "}) {
    ExpectOneLineError(Sigvisor(std::string("run ") + arch + "--cmdline ops=abc"),
                       "--cmdline ops 'abc' is not a count from 1 to 16777216");
    ExpectOneLineError(Sigvisor(std::string("run ") + arch + "--ops 3 --cmdline ops=7"),
                       "--cmdline 'ops=7' and --ops 3 both set the guest's ops: give one");
    ExpectOneLineError(Sigvisor(std::string("run ") + arch + "--ops 3 --cmdline ops=3"),
                       "--cmdline 'ops=3' and --ops 3 both set the guest's ops");
    ExpectOneLineError(
        Sigvisor(std::string("run ") + arch + "--workload hello --cmdline 'a=1 workload=console'"),
        "--cmdline 'workload=console' and --workload hello both set the guest's workload");
  }
  // trace's --ops has a value of its own (1), which sets the guest's ops.
  ExpectOneLineError(Sigvisor("trace --cmdline ops=2"),
                     "--cmdline 'ops=2' and --ops 1 both set the guest's ops");
  // Alone, --cmdline's words still reach the guest as they are.
  CommandResult r = Sigvisor("run --arch mips --workload hello --cmdline ops=2 --quiet --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["cmdline"], "workload=hello ops=2");
}

// Issue 30: run took --ops 0 and --ops 4294967296 where bench takes 1 to 16777216;
// every command's count is the same rule, in the same words.
TEST(CliTest, AnOpCountIsOneRuleEverywhere) {
  for (const char* command :
       {"run", "run --arch mips", "trace", "bench", "study dr7", "study tramp"}) {
    for (const char* ops : {"0", "4294967296", "16777217", "-1"}) {
      CommandResult r = Sigvisor(std::string(command) + " --ops " + ops);
      ExpectOneLineError(r, std::string("--ops '") + ops + "' is not a count from 1 to 16777216");
      EXPECT_EQ(r.out, "") << command;
    }
  }
}

// Issue 30: selftest (and fault) run once; --ops with them was ignored silently.
TEST(CliTest, OpsForAWorkloadThatRunsOnceIsRefused) {
  for (const char* workload : {"selftest", "fault"}) {
    ExpectOneLineError(Sigvisor(std::string("run --arch mips --workload ") + workload + " --ops 3"),
                       std::string("--ops: workload '") + workload +
                           "' has no ops to count (fault and selftest run once: give no --ops)");
  }
  ExpectOneLineError(Sigvisor("run --workload selftest --ops 3"), "--ops: workload 'selftest'");
}

// Issue 30: `images foo` and `help frob` printed and exited 0.
TEST(CliTest, AnUnknownArgumentOrHelpTopicIsRefused) {
  CommandResult images = Sigvisor("images foo");
  ExpectOneLineError(images, "`sigvisor images` takes no argument 'foo' (see --help)");
  EXPECT_EQ(images.out, "");
  CommandResult help = Sigvisor("help frob");
  ExpectOneLineError(help, "unknown command 'frob' (try `sigvisor help`)");
  EXPECT_EQ(help.out, "");
  EXPECT_EQ(Sigvisor("help run").status, 0);
  EXPECT_EQ(Sigvisor("help help").status, 0);
}

// Issue 30: a --timeout past the watchdog clock's range overflowed its deadline into
// the past, and the guest was stopped at once.
TEST(CliTest, ATimeoutThatDoesNotFitIsRefused) {
  for (const char* command : {"run", "run --arch mips", "trace", "bench", "study dr7"}) {
    for (const char* timeout : {"3000000h", "9223372036s", "inf"}) {
      CommandResult r = Sigvisor(std::string(command) + " --timeout " + timeout);
      ExpectOneLineError(r, std::string("--timeout '") + timeout +
                                "': longer than the longest timeout, 8760h (a year)");
      EXPECT_EQ(r.out, "") << command;
    }
  }
  CommandResult longest =
      Sigvisor("run --arch mips --workload hello --ops 1 --quiet --timeout 8760h");
  EXPECT_EQ(longest.status, 0) << longest.err;
}

// Issue 30: the MIPS interpreter's run ends at --timeout as a KVM run does.
TEST(CliTest, AMipsRunEndsAtItsTimeout) {
  CommandResult r =
      Sigvisor("run --arch mips --workload lat_sig --ops 1000 --timeout 1ms --quiet --json");
  EXPECT_EQ(r.status, kGuestFailed) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["outcome"], "timeout");
  EXPECT_NE(r.err.find("sigvisor: timeout: the guest ran past the 1ms timeout"), std::string::npos)
      << r.err;
}

}  // namespace
