// Fault injection end to end (`sigvisor run --inject`, docs/inject.md): the guest
// kernel survives every fault aimed at a user task and does what Linux would; a fault
// aimed at the kernel ends the run with a panic report; a seeded campaign is
// reproducible. Counts are exact; no time is asserted.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_test_support.h"
#include "tests/host_lane.h"

namespace {

using ::sigvisor::testing::CommandResult;
using ::sigvisor::testing::ExpectOneLineError;
using ::sigvisor::testing::HaveKvm;
using ::sigvisor::testing::Sigvisor;
using json = nlohmann::json;

constexpr int kSigfpe = 8;
constexpr int kSigusr1 = 10;
constexpr int kSigsegv = 11;
// A task killed by signal N: the guest exits with 128 + N, as a shell reports it.
constexpr int kKilledBySigsegv = 128 + kSigsegv;

json RunJson(const std::string& args) {
  CommandResult r = Sigvisor("run --json --quiet " + args);
  EXPECT_FALSE(r.out.empty()) << "sigvisor run " << args << ": " << r.err;
  json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << r.out;
  return doc;
}

// The addresses of the kernel's user accesses inside `function`, for `variant`.
std::vector<std::string> UserAccessSites(const std::string& variant, const std::string& function) {
  CommandResult r = Sigvisor("sites --uaccess --json --variant " + variant);
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::string> sites;
  const json doc = json::parse(r.out);
  for (const json& site : doc["sites"]) {
    if (site["function"] == function) sites.push_back(site["address"]);
  }
  return sites;
}

// Seed 002's two styles of user access must fail the same way: every access of the
// signal frame's set-up, made to fault, ends with SIGSEGV and the same exit status.
class UaccessInjectionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(UaccessInjectionTest, EveryFrameSetupAccessGivesSigsegv) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  const std::vector<std::string> sites = UserAccessSites(GetParam(), "exit_to_user_mode");
  ASSERT_EQ(sites.size(), 34u);  // 8-byte pretcode .. uc_sigmask: one store per field
  for (const std::string& site : sites) {
    json run = RunJson("--variant " + GetParam() + " --workload lat_sig --ops 2 --inject page=np,addr=access,at=" + site);
    EXPECT_EQ(run["exit_code"], kKilledBySigsegv) << site;
    ASSERT_EQ(run["injections"].size(), 1u) << site;
    const json& injection = run["injections"][0];
    EXPECT_EQ(injection["outcome"], "task_killed") << site << ": " << injection.dump();
    EXPECT_EQ(injection["signal"], kSigsegv) << site;
    EXPECT_EQ(injection["rip"], site);
    EXPECT_EQ(injection["cpl"], 0);
  }
}

TEST_P(UaccessInjectionTest, EverySigreturnReadGivesSigsegv) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  const std::vector<std::string> sites = UserAccessSites(GetParam(), "sys_rt_sigreturn");
  ASSERT_EQ(sites.size(), 19u);  // uc_sigmask, 17 registers, eflags
  for (const std::string& site : sites) {
    json run = RunJson("--variant " + GetParam() + " --workload lat_sig --ops 2 --inject page=np,addr=access,at=" + site);
    EXPECT_EQ(run["exit_code"], kKilledBySigsegv) << site;
    ASSERT_EQ(run["injections"].size(), 1u) << site;
    EXPECT_EQ(run["injections"][0]["outcome"], "task_killed") << site;
    EXPECT_EQ(run["injections"][0]["signal"], kSigsegv) << site;
  }
}

TEST_P(UaccessInjectionTest, AnEvictedFramePageIsPagedBackIn) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  const std::vector<std::string> sites = UserAccessSites(GetParam(), "exit_to_user_mode");
  ASSERT_FALSE(sites.empty());
  json run = RunJson("--variant " + GetParam() +
                     " --workload lat_sig --ops 2 --inject page=evict,addr=access,at=" + sites[0]);
  EXPECT_EQ(run["exit_code"], 0) << run["console"];
  ASSERT_EQ(run["injections"].size(), 1u);
  EXPECT_EQ(run["injections"][0]["outcome"], "repaired") << run["injections"].dump();
}

INSTANTIATE_TEST_SUITE_P(Variants, UaccessInjectionTest,
                         ::testing::Values("baseline", "uaccess=cerr"),
                         [](const auto& info) {
                           return info.param == "baseline" ? std::string("err_or")
                                                           : std::string("cerr");
                         });

TEST(InjectTest, DivideErrorAtAUserInstructionGivesSigfpeThere) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  // lat_sig has no SIGFPE handler: the task dies of it, as under Linux.
  json run = RunJson("--workload lat_sig --ops 4 --inject exc=de,op=2,phase=sig_hndl");
  EXPECT_EQ(run["exit_code"], 128 + kSigfpe);
  ASSERT_EQ(run["injections"].size(), 1u);
  const json& injection = run["injections"][0];
  EXPECT_EQ(injection["outcome"], "task_killed");
  EXPECT_EQ(injection["signal"], kSigfpe);
  EXPECT_EQ(injection["cpl"], 3);
  EXPECT_EQ(injection["phase"], "sig_hndl");
  EXPECT_EQ(injection["op"], 2);
  // si_addr is the user instruction the #DE was raised at.
  EXPECT_EQ(injection["si_addr"], injection["rip"]);
}

TEST(InjectTest, PageFaultCarriesItsCr2IntoSiAddr) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  json run = RunJson("--workload lat_sig --ops 4 --inject exc=pf:4,cr2=0x1234,op=2,phase=sig_hndl");
  EXPECT_EQ(run["exit_code"], kKilledBySigsegv);
  ASSERT_EQ(run["injections"].size(), 1u);
  EXPECT_EQ(run["injections"][0]["outcome"], "task_killed");
  EXPECT_EQ(run["injections"][0]["signal"], kSigsegv);
  EXPECT_EQ(run["injections"][0]["address"], "0x1234");
  EXPECT_EQ(run["injections"][0]["si_addr"], "0x1234");  // the guest read it from CR2
}

TEST(InjectTest, DivideErrorReachesAnInstalledHandler) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  json run = RunJson("--workload divzero --ops 4 --inject exc=de,op=1");
  ASSERT_EQ(run["injections"].size(), 1u);
  EXPECT_EQ(run["injections"][0]["outcome"], "delivered");
  EXPECT_EQ(run["injections"][0]["signal"], kSigfpe);
  EXPECT_EQ(run["injections"][0]["si_addr"], run["injections"][0]["rip"]);
}

TEST(InjectTest, HostSignalReachesABlockedThenUnblockedHandlerOnce) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  // hostsig exits with how often its handler ran (100 if while blocked, 101 if it
  // ran for a signal the host did not send).
  json run = RunJson("--workload hostsig --ops 4 --inject sig=usr1,op=2");
  EXPECT_EQ(run["exit_code"], 1) << run["console"];
  ASSERT_EQ(run["injections"].size(), 1u);
  EXPECT_EQ(run["injections"][0]["outcome"], "delivered");
  EXPECT_EQ(run["injections"][0]["signal"], kSigusr1);
  EXPECT_NE(run["console"].get<std::string>().find(
                "hostsig: the handler ran 1 time: 0 for the workload's signals, 1 for signals "
                "injected by the host\n"),
            std::string::npos)
      << run["console"];
  // Two while it blocks SIGUSR1 are one pending signal: one run, and no failure.
  json merged = RunJson("--workload hostsig --ops 4 --inject sig=usr1,op=2,count=2");
  EXPECT_EQ(merged["exit_code"], 1) << merged["console"];
  EXPECT_NE(merged["console"].get<std::string>().find(
                "hostsig: the handler ran 1 time: 0 for the workload's signals, 1 for the 2 "
                "injected by the host (1 merged with the same signal already pending, as classic "
                "signals are)\n"),
            std::string::npos)
      << merged["console"];
  // Without the injection the handler never runs.
  EXPECT_EQ(RunJson("--workload hostsig --ops 4")["exit_code"], 0);
}

// lat_sig under a signal from the host: its handler runs once more than the workload
// sent, which it tells apart from an extra signal by the kernel's count of the
// host's (SYS_host_signals), says, and does not take for a failure (it once exited 1
// without a word); bench keeps the run's phases and its table.
TEST(InjectTest, ASignalFromTheHostIsNoFailureOfTheWorkload) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  json run = RunJson("--workload lat_sig --ops 4 --inject sig=usr1,op=2,phase=sig_hndl");
  EXPECT_EQ(run["exit_code"], 0) << run["console"];
  ASSERT_EQ(run["injections"].size(), 1u);
  EXPECT_EQ(run["injections"][0]["outcome"], "delivered");
  EXPECT_NE(run["console"].get<std::string>().find(
                "lat_sig sig_hndl: the handler ran 5 times: 4 for the workload's signals, 1 for "
                "signals injected by the host\n"),
            std::string::npos)
      << run["console"];
  EXPECT_EQ(run["console"].get<std::string>().find("FAIL"), std::string::npos) << run["console"];
  CommandResult bench = Sigvisor(
      "bench --json --workloads lat_sig --ops 3 --repetitions 1 --variants baseline --traps off "
      "--inject sig=usr1,op=2,phase=sig_hndl");
  ASSERT_EQ(bench.status, 0) << bench.err;
  const json doc = json::parse(bench.out);
  EXPECT_TRUE(doc["complete"]) << bench.out;
  bool hndl = false;
  for (const json& cell : doc["cells"]) hndl = hndl || cell["phase"] == "sig_hndl";
  EXPECT_TRUE(hndl) << bench.out;
}

// The workloads' verdict (guest-kit/user/workloads.c, handled_verdict), checked in
// the guest: lost, extra, injected and merged signals each get their line, and a
// SIGUSR1 from another guest process, which the host did not send, fails it with
// "1 extra signal that neither the workload nor the host sent". No KVM breakpoint is
// needed, and the MIPS build runs the same case.
TEST(InjectTest, TheVerdictTellsTheHostsSignalsFromLostAndExtraOnes) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  for (const char* arch : {"x86_64", "mips"}) {
    json run = RunJson(std::string("--arch ") + arch + " --workload selftest --cmdline case=verdict");
    EXPECT_EQ(run["exit_code"], 0) << arch << ": " << run["console"];
    EXPECT_EQ(run["console"], "PASS verdict\n") << arch;
  }
}

TEST(InjectTest, AFaultInTheKernelEndsTheRunWithAPanicReport) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  CommandResult r = Sigvisor("run --quiet --workload lat_sig --ops 2 --inject exc=gp:0,in=kernel,at=sys_kill");
  EXPECT_EQ(r.status, 124);  // the guest failed (`sigvisor help`, "exit status")
  EXPECT_NE(r.err.find("guest kernel panic: kernel exception 13"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sys_kill"), std::string::npos) << r.err;
  json run = RunJson("--workload lat_sig --ops 2 --inject exc=gp:0,in=kernel,at=sys_kill");
  EXPECT_EQ(run["outcome"], "guest_panic");
  EXPECT_EQ(run["injections"][0]["outcome"], "guest_panic");
}

TEST(InjectTest, TriggersThatNeverComeAreReportedNotReached) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  json run = RunJson("--workload lat_sig --ops 2 --inject sig=usr1,op=5,phase=sig_hndl,count=2");
  ASSERT_EQ(run["injections"].size(), 2u);
  EXPECT_EQ(run["injections"][0]["outcome"], "not_reached");
  EXPECT_EQ(run["injections"][1]["outcome"], "not_reached");
}

// A seeded campaign of 300 injections runs to the end, reports every one, and is
// the same again with the same seed.
TEST(InjectTest, SeededCampaignIsCompleteAndReproducible) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  const std::string campaign =
      "--workload lat_sig --ops 120 --seed 42"
      " --inject sig=usr1,random,count=100,phase=sig_inst"
      " --inject sig=usr1,random,count=100,phase=sig_hndl"
      " --inject page=evict,random,count=100,phase=sig_hndl";
  json first = RunJson(campaign);
  json second = RunJson(campaign);
  EXPECT_EQ(first["outcome"], "exited");
  ASSERT_EQ(first["injections"].size(), 300u);
  std::map<std::string, int> outcomes;
  for (const json& injection : first["injections"]) outcomes[injection["outcome"]]++;
  EXPECT_EQ(outcomes["delivered"], 200);
  EXPECT_EQ(outcomes["repaired"], 100);
  EXPECT_EQ(first["injections"], second["injections"]);
  EXPECT_EQ(first["exit_code"], second["exit_code"]);
  EXPECT_EQ(first["exits"]["total"], second["exits"]["total"]);
  // Another seed draws other operations.
  json other = RunJson("--workload lat_sig --ops 120 --seed 43"
                       " --inject sig=usr1,random,count=100,phase=sig_inst");
  ASSERT_EQ(other["injections"].size(), 100u);
  std::vector<int> ops_42, ops_43;
  for (int i = 0; i < 100; ++i) {
    ops_42.push_back(first["injections"][i]["op"]);
    ops_43.push_back(other["injections"][i]["op"]);
  }
  EXPECT_NE(ops_42, ops_43);
}

TEST(InjectTest, BadSpecsAreRefusedWithOneLine) {
  ExpectOneLineError(Sigvisor("run --inject exc=gp,op=1"), "exc=gp");
  ExpectOneLineError(Sigvisor("run --inject sig=usr1"), "--inject 'sig=usr1'");
  ExpectOneLineError(Sigvisor("run --inject op=1"), "--inject 'op=1'");
  ExpectOneLineError(Sigvisor("run --inject exc=de,op=0"), "op=0");
  ExpectOneLineError(Sigvisor("run --inject sig=nosuch,op=1"), "sig=nosuch");
  ExpectOneLineError(Sigvisor("run --inject page=np,addr=access,op=1"), "addr=access");
  ExpectOneLineError(Sigvisor("run --inject exc=de,op=1,colour=red"), "colour");
  if (!HaveKvm()) return;
  ExpectOneLineError(Sigvisor("run --inject exc=de,at=no_such_function"), "no_such_function");
  // A phase the image never names is a typo, refused before the run as an unknown
  // symbol is (it once gave a campaign of not_reached and status 0).
  ExpectOneLineError(Sigvisor("run --workload lat_sig --inject sig=usr1,op=2,phase=sig_hnld"),
                     "phase=sig_hnld");
}

// A trigger that never came says why, in the record and as a warning of the run: a
// phase that exists but did not run, an address the guest never executed.
TEST(InjectTest, TriggersThatNeverCameAreWarnedAbout) {
  if (!HaveKvm()) GTEST_SKIP() << "/dev/kvm not usable";
  json run = RunJson("--workload lat_sig --ops 2 --inject sig=usr1,op=1,phase=divzero");
  EXPECT_EQ(run["outcome"], "exited");
  ASSERT_EQ(run["injections"].size(), 1u);
  EXPECT_EQ(run["injections"][0]["outcome"], "not_reached");
  EXPECT_NE(run["injections"][0]["detail"].get<std::string>().find(
                "no phase 'divzero' ran (this run's phases: sig_inst, sig_hndl)"),
            std::string::npos)
      << run["injections"][0].dump();
  bool warned = false;
  for (const json& w : run["warnings"]) {
    warned = warned || w.get<std::string>().find("--inject 'sig=usr1,op=1,phase=divzero'") == 0;
  }
  EXPECT_TRUE(warned) << run["warnings"].dump();

  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  run = RunJson("--workload hello --ops 2 --inject exc=de,in=kernel,at=panic_at");
  EXPECT_EQ(run["outcome"], "exited");
  ASSERT_EQ(run["injections"].size(), 1u);
  EXPECT_EQ(run["injections"][0]["outcome"], "not_reached");
  warned = false;
  for (const json& w : run["warnings"]) {
    const std::string text = w.get<std::string>();
    warned = warned || (text.find("--inject 'exc=de,in=kernel,at=panic_at'") == 0 &&
                        text.find("panic_at") != std::string::npos &&
                        text.find("never executed") != std::string::npos);
  }
  EXPECT_TRUE(warned) << run["warnings"].dump();
}

}  // namespace
