// `sigvisor image --variant V -o FILE`: the embedded kernel written out byte for byte
// (it boots from the file as from the binary), refusals with one line and status 2.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/cli_test_support.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using ::sigvisor::testing::Slurp;
using ::sigvisor::testing::TempPath;

TEST(ImageCliTest, HelpTeachesTheCommand) {
  CommandResult help = Sigvisor("image --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("-o FILE"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--variant"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("qemu-system-x86_64"), std::string::npos) << help.out;
  EXPECT_NE(Sigvisor("help").out.find("image"), std::string::npos);
}

TEST(ImageCliTest, WritesTheVariantItsRunBoots) {
  const std::string baseline = TempPath("baseline.elf"), lazy = TempPath("dr7-lazy.elf");
  CommandResult r = Sigvisor("image -o " + baseline);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("variant baseline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(baseline), std::string::npos) << r.out;
  const std::string bytes = Slurp(baseline);
  ASSERT_GT(bytes.size(), 4096u);
  EXPECT_EQ(bytes.substr(0, 4), "\x7f" "ELF");
  EXPECT_NE(bytes.find(std::string("\x02\xb0\xad\x1b", 4)), std::string::npos);  // Multiboot

  ASSERT_EQ(Sigvisor("image --variant dr7=lazy -o " + lazy).status, 0);
  EXPECT_NE(Slurp(lazy), bytes);  // another build
  // An existing file is replaced.
  ASSERT_EQ(Sigvisor("image --variant baseline -o " + lazy).status, 0);
  EXPECT_EQ(Slurp(lazy), bytes);

  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  CommandResult from_file = Sigvisor("run --image " + baseline + " --workload hello --json");
  CommandResult embedded = Sigvisor("run --workload hello --json");
  ASSERT_EQ(from_file.status, 0) << from_file.err;
  ASSERT_EQ(embedded.status, 0) << embedded.err;
  // The same kernel: the same console (its timing line excepted) and the same exits.
  const nlohmann::json a = nlohmann::json::parse(from_file.out);
  const nlohmann::json b = nlohmann::json::parse(embedded.out);
  const std::string console = a["console"];
  EXPECT_EQ(console.substr(0, console.find('\n')), "hello from user mode: pid 1");
  EXPECT_EQ(b["console"].get<std::string>().rfind(console.substr(0, console.find(':')), 0), 0u);
  EXPECT_EQ(a["exits"]["total"], b["exits"]["total"]);
  EXPECT_EQ(b["variant"]["name"], "baseline");
}

TEST(ImageCliTest, RefusesDirectoriesAndUnwritablePaths) {
  const std::string dir = TempPath("a-directory");
  ::mkdir(dir.c_str(), 0755);
  ExpectOneLineError(Sigvisor("image -o " + dir), "is a directory; give the path of a file");
  ExpectOneLineError(Sigvisor("image -o /nonexistent-dir/kernel.elf"),
                     "-o '/nonexistent-dir/kernel.elf': cannot write there");
  ExpectOneLineError(Sigvisor("image -o /proc/kernel.elf"), "cannot write there");
  ExpectOneLineError(Sigvisor("image"), "needs -o FILE");
  ExpectOneLineError(Sigvisor("image --variant nonsense -o " + TempPath("x.elf")), "nonsense");
  ExpectOneLineError(Sigvisor("image extra -o " + TempPath("x.elf")), "takes no argument 'extra'");
  struct stat st;
  EXPECT_NE(::stat(TempPath("x.elf").c_str(), &st), 0);  // nothing written on refusal
}

// Issue 30: `image -o /dev/full` said "wrote ... bytes, to /dev/full" and exited 0 (it
// wrote /dev/full.partial and renamed it over the device). A device is written in
// place now, and a write that fails is one line and status 125, with nothing said on
// stdout.
TEST(ImageCliTest, AWriteThatFailsIsAnError) {
  if (!::sigvisor::testing::HaveDevFull()) GTEST_SKIP() << "no /dev/full here";
  CommandResult r = Sigvisor("image -o /dev/full");
  ExpectOneLineError(r, "-o '/dev/full': the image was not written: No space left on device");
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(::sigvisor::testing::HaveDevFull());  // still the device
  struct stat st;
  EXPECT_NE(::stat("/dev/full.partial", &st), 0);
  // The image written, its line lost: the line's loss is the error.
  const std::string path = TempPath("written.elf");
  r = ::sigvisor::testing::SigvisorWithStdout("image -o " + path, "/dev/full");
  ExpectOneLineError(r, "stdout: the output of `sigvisor image` was not written: No space left");
  EXPECT_EQ(Slurp(path).substr(0, 4), "\x7f" "ELF");
  EXPECT_NE(::stat((path + ".partial").c_str(), &st), 0);
}

}  // namespace
