// The trap engine under KVM with the trap test guests (tests/guests/trap_*.S): exact
// trap counts by kind, site and phase; what the guest reads back is architecturally
// right and the same with --trap=off; lazy DR7 loads; a CPL0 execute breakpoint the
// guest enables still fires in the guest; a hlt that is no site is reported.
#include <gtest/gtest.h>

#include <string>

#include "arch/x86_64/vmm/machine/x86_machine.h"
#include "arch/x86_64/vmm/probe/probe.h"
#include "arch/x86_64/vmm/trap/site_table.h"
#include "tests/host_lane.h"
#include "tests/kvm_test_support.h"
#include "vmm/app/images/embedded_images.h"

namespace sigvisor {
namespace {

using ::sigvisor::testing::LoadTestGuest;

x86::MachineReport Boot(const KvmSystem& kvm, const ElfImage& image, TrapMechanism trap,
                        uint64_t ops) {
  x86::MachineConfig config;
  config.cmdline = "ops=" + std::to_string(ops);
  config.session.timeout = absl::Seconds(60);
  config.trap = trap;
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(kvm, image, config);
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : x86::MachineReport{};
}

const PhaseResult* FindPhase(const RunResult& result, const std::string& name) {
  for (const PhaseResult& phase : result.phases) {
    if (phase.name == name) return &phase;
  }
  ADD_FAILURE() << "no phase " << name;
  return nullptr;
}

// "name=0x<16 hex digits>" as the guests print it.
std::string Line(const std::string& name, uint64_t value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%s=0x%016llx\n", name.c_str(),
                static_cast<unsigned long long>(value));
  return text;
}

void ExpectPrinted(const RunResult& result, const std::string& name, uint64_t value) {
  EXPECT_NE(result.console.find(Line(name, value)), std::string::npos)
      << "expected " << Line(name, value) << "in\n" << result.console;
}

TEST(TrapDebugRegistersTest, EachDr7WriteIsOneTrapAndCostsNoLoadWithoutEnables) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const ElfImage guest = LoadTestGuest("trap_dr");
  for (uint64_t ops : {3, 40}) {
    SCOPED_TRACE(ops);
    x86::MachineReport report = Boot(*kvm, guest, TrapMechanism::kPatch, ops);
    const RunResult& r = report.result;
    ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
    EXPECT_EQ(r.exit_code, 0);
    ExpectPrinted(r, "dr7_mismatches", 0);  // every read returned what was written
    const PhaseResult* dr7 = FindPhase(r, "dr7");
    ASSERT_NE(dr7, nullptr);
    EXPECT_EQ(dr7->traps.by_kind, (TrapCounts{{"dr_read", ops}, {"dr_write", ops}}));
    EXPECT_EQ(dr7->traps.by_site, (TrapCounts{{"dr7_read_site", ops}, {"dr7_write_site", ops}}));
    EXPECT_EQ(dr7->traps.dr_loads, 0u);
    EXPECT_EQ(dr7->exits, (ExitCounts{{"hlt", 2 * ops}}));  // one exit per trap, nothing else
    // Each write that turns breakpoint 0 on or off is one hardware load.
    const PhaseResult* enable = FindPhase(r, "dr7_enable");
    ASSERT_NE(enable, nullptr);
    EXPECT_EQ(enable->traps.by_kind, (TrapCounts{{"dr_write", ops}}));
    EXPECT_EQ(enable->traps.dr_loads, ops);
  }
}

TEST(TrapDebugRegistersTest, ReadBackValuesAreArchitectural) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, LoadTestGuest("trap_dr"), TrapMechanism::kPatch, 2);
  const RunResult& r = report.result;
  ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
  ExpectPrinted(r, "dr7_last", 0x500);  // GE/LE as written, bit 10 reads as 1
  ExpectPrinted(r, "dr0", 0x0000111111111000);
  ExpectPrinted(r, "dr1", 0x0000222222222000);
  ExpectPrinted(r, "dr2", 0x0000333333333000);
  ExpectPrinted(r, "dr3", 0xffff800000004000);
  ExpectPrinted(r, "dr7_via_dr5", 0x500);
  // General detection: #DB at the access, DR6.BD, GD cleared.
  ExpectPrinted(r, "fault_vector", 1);
  ExpectPrinted(r, "dr7_after_gd", 0x400);
  EXPECT_NE(r.console.find("dr6_after_gd=0x00000000ffff2ff0"), std::string::npos) << r.console;
}

TEST(TrapDebugRegistersTest, AnExecuteBreakpointTheGuestEnablesStillFires) {
  SIGVISOR_REQUIRE_KVM(kvm);
  // Under patch the VMM loads the guest's DR7, which the hardware lane cannot arm.
  const std::optional<std::string> lacks =
      testing::LaneLacks(testing::LaneLimit::kNestedHardwareBreakpoints);
  for (TrapMechanism trap : {TrapMechanism::kOff, TrapMechanism::kPatch}) {
    SCOPED_TRACE(std::string(TrapMechanismName(trap)));
    if (trap == TrapMechanism::kPatch && lacks) {
      std::printf("patch not run: %s\n", lacks->c_str());
      continue;
    }
    x86::MachineReport report = Boot(*kvm, LoadTestGuest("trap_dr"), trap, 1);
    const RunResult& r = report.result;
    ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
    ExpectPrinted(r, "bp_vector", 1);      // #DB, to the guest's own handler
    ExpectPrinted(r, "bp_rip_offset", 0);  // at the breakpoint, before the instruction
    EXPECT_NE(r.console.find("bp_dr6=0x00000000ffff0ff1"), std::string::npos)  // DR6.B0
        << r.console;
    EXPECT_EQ(r.console.find("bp_not_taken"), std::string::npos);
  }
  x86::MachineReport report = Boot(*kvm, LoadTestGuest("trap_dr"), TrapMechanism::kPatch, 1);
  const PhaseResult* bp = FindPhase(report.result, "breakpoint");
  ASSERT_NE(bp, nullptr);
  // DR0, DR7 on, DR6 and DR7 cleared; DR6 read. Loads: the enable, the DR6 clear (the
  // hardware holds B0), the disable.
  EXPECT_EQ(bp->traps.by_kind, (TrapCounts{{"dr_read", 1}, {"dr_write", 4}}));
  // Where the breakpoint cannot fire, DR6 holds no B0 to clear: one load fewer.
  EXPECT_EQ(bp->traps.dr_loads, lacks ? 2u : 3u);
}

TEST(TrapSegmentLoadsTest, EachLoadIsOneTrap) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const ElfImage guest = LoadTestGuest("trap_seg");
  for (uint64_t ops : {4, 30}) {
    SCOPED_TRACE(ops);
    x86::MachineReport report = Boot(*kvm, guest, TrapMechanism::kPatch, ops);
    const RunResult& r = report.result;
    ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
    const PhaseResult* phase = FindPhase(r, "segload");
    ASSERT_NE(phase, nullptr);
    EXPECT_EQ(phase->traps.by_kind, (TrapCounts{{"segment_load", ops}}));
    EXPECT_EQ(phase->exits, (ExitCounts{{"hlt", ops}}));
    // Outside the phase: 11 mov/pop/lfs/lss/lgs, 1 null load, 2 wrmsr to GS bases,
    // 2 swapgs, wrfsbase, wrgsbase, 3 faulting loads; and 1 wrmsr of LSTAR.
    EXPECT_EQ(r.traps.by_kind(), (TrapCounts{{"msr_write", 1}, {"segment_load", 21 + ops}}));
    EXPECT_EQ(r.traps.dr_loads(), 0u);
    const uint64_t mov_fs = guest.symbols().Find("mov_fs_site")->addr;
    EXPECT_EQ(r.traps.by_site().at({mov_fs, "segment_load"}).count, 1u);
    EXPECT_EQ(report.trap_sites, 23u);
  }
}

TEST(TrapSegmentLoadsTest, SelectorsAndBasesAreArchitectural) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, LoadTestGuest("trap_seg"), TrapMechanism::kPatch, 3);
  const RunResult& r = report.result;
  ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
  ExpectPrinted(r, "fs_base", 0x345000);        // from descriptor 0x50
  ExpectPrinted(r, "fs_0", 0x1111111111111111);  // %fs:0 reads there
  ExpectPrinted(r, "gs_base", 0x346000);
  ExpectPrinted(r, "gs_0", 0x2222222222222222);
  ExpectPrinted(r, "es", 0x2b);
  ExpectPrinted(r, "ds", 0x68);
  ExpectPrinted(r, "fs_base", 0x12345678);  // pop %fs of 0x68
  ExpectPrinted(r, "stack_depth", 0);       // push/pop balanced
  ExpectPrinted(r, "lfs_offset", 0xdeadbeef);
  ExpectPrinted(r, "lss_offset", 0xffffffffffff1234);  // 16-bit: the rest kept
  ExpectPrinted(r, "lgs_offset", 0xcafe0000);
  ExpectPrinted(r, "gs_base", 0x2000);  // swapgs
  ExpectPrinted(r, "kernel_gs_base", 0x1000);
  ExpectPrinted(r, "lstar", 0x123000);
  ExpectPrinted(r, "gdt_50", 0x00cf93345000ffff);  // marked accessed
  // Not present: #NP(0x60), for SS #SS(0x60); beyond the GDT: #GP(0x78).
  EXPECT_NE(r.console.find(Line("fault_vector", 11) + Line("fault_error", 0x60)), std::string::npos);
  EXPECT_NE(r.console.find(Line("fault_vector", 12) + Line("fault_error", 0x60)), std::string::npos);
  EXPECT_NE(r.console.find(Line("fault_vector", 13) + Line("fault_error", 0x78)), std::string::npos);
}

TEST(TrapControlRunTest, TrapsChangeOnlyTheCounts) {
  SIGVISOR_REQUIRE_KVM(kvm);
  for (const char* name : {"trap_dr", "trap_seg"}) {
    SCOPED_TRACE(name);
    const ElfImage guest = LoadTestGuest(name);
    x86::MachineReport off = Boot(*kvm, guest, TrapMechanism::kOff, 7);
    x86::MachineReport patch = Boot(*kvm, guest, TrapMechanism::kPatch, 7);
    ASSERT_EQ(off.result.outcome, Outcome::kExited) << off.result.diagnosis;
    ASSERT_EQ(patch.result.outcome, Outcome::kExited) << patch.result.diagnosis;
    // trap_dr's GD self-trap and breakpoint: under off the guest's own moves arm them,
    // under patch the VMM's emulation and loads, and the TCG lane honours only the
    // former (host_lane.h): there its console differs, not its counts.
    const bool same_console =
        std::string(name) != "trap_dr" ||
        (!::sigvisor::testing::LaneLacks(::sigvisor::testing::LaneLimit::kDr7GeneralDetect) &&
         !::sigvisor::testing::LaneLacks(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints));
    if (same_console) {
      EXPECT_EQ(off.result.console, patch.result.console);
    }
    EXPECT_EQ(off.result.traps.total(), 0u);
    EXPECT_EQ(off.trap_sites, 0u);
    EXPECT_GT(patch.result.traps.total(), 0u);
  }
}

TEST(TrapControlRunTest, AHltThatIsNoSiteIsReported) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineReport report = Boot(*kvm, LoadTestGuest("stray_hlt"), TrapMechanism::kPatch, 0);
  EXPECT_EQ(report.result.outcome, Outcome::kUnexpectedExit);
  EXPECT_NE(report.result.diagnosis.find("hlt at 0x100001 (stray_hlt) is not one of the image's 0 "
                                         "trap sites"),
            std::string::npos)
      << report.result.diagnosis;
}

// --trap=pv with tests/guests/trap_pv.S, which speaks the kernel's pv-page protocol:
// every write counted by kind and site with no exit; only the writes that change the
// hardware make a hypercall, each one load. N and 2N ops give the same per op.
TEST(TrapPvTest, CountsEachWriteWithoutAnExit) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const ElfImage guest = LoadTestGuest("trap_pv");
  for (uint64_t ops : {3, 40}) {
    SCOPED_TRACE(ops);
    x86::MachineReport report = Boot(*kvm, guest, TrapMechanism::kPv, ops);
    const RunResult& r = report.result;
    ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(report.trap_sites, 0u);  // nothing patched
    const PhaseResult* dr7 = FindPhase(r, "dr7");
    ASSERT_NE(dr7, nullptr);
    EXPECT_EQ(dr7->traps.by_kind, (TrapCounts{{"dr_write", ops}}));
    EXPECT_EQ(dr7->traps.by_site, (TrapCounts{{"dr7_write_return", ops}}));
    EXPECT_EQ(dr7->traps.dr_loads, 0u);
    EXPECT_EQ(dr7->traps.hypercalls, 0u);
    EXPECT_EQ(dr7->exits, ExitCounts{});  // no exit at all
    const PhaseResult* enable = FindPhase(r, "dr7_enable");
    ASSERT_NE(enable, nullptr);
    EXPECT_EQ(enable->traps.by_kind, (TrapCounts{{"dr_write", ops}}));
    EXPECT_EQ(enable->traps.dr_loads, ops);
    EXPECT_EQ(enable->traps.hypercalls, ops);
    EXPECT_EQ(enable->exits, (ExitCounts{{"io", ops}}));  // the hypercalls, nothing else
    const PhaseResult* segbase = FindPhase(r, "segbase");
    ASSERT_NE(segbase, nullptr);
    EXPECT_EQ(segbase->traps.by_kind, (TrapCounts{{"segment_load", ops}}));
    EXPECT_EQ(segbase->traps.by_site, (TrapCounts{{"gs_write_return", ops}}));
    EXPECT_EQ(segbase->exits, ExitCounts{});
    // The hypercalls are in the exit ledger under their own name.
    uint64_t hypercall_exits = 0;
    for (const auto& [key, stats] : r.ledger.by_detail()) {
      if (key.second == "port 0x508 out (hypercall pv_debugreg_load)") hypercall_exits += stats.count;
    }
    EXPECT_EQ(hypercall_exits, r.traps.hypercalls());
    const uint64_t dr7_return = guest.symbols().Find("dr7_write_return")->addr;
    EXPECT_EQ(r.traps.by_site().at({dr7_return, "dr_write"}).count, ops);
  }
}

TEST(TrapPvTest, TrapsChangeOnlyTheCounts) {
  SIGVISOR_REQUIRE_KVM(kvm);
  const ElfImage guest = LoadTestGuest("trap_pv");
  x86::MachineReport off = Boot(*kvm, guest, TrapMechanism::kOff, 5);
  x86::MachineReport patch = Boot(*kvm, guest, TrapMechanism::kPatch, 5);
  x86::MachineReport pv = Boot(*kvm, guest, TrapMechanism::kPv, 5);
  for (const x86::MachineReport* report : {&off, &patch, &pv}) {
    ASSERT_EQ(report->result.outcome, Outcome::kExited) << report->result.diagnosis;
    EXPECT_EQ(report->result.exit_code, 0);
  }
  // Where nested breakpoints the VMM loads never fire (the TCG lane), the guest's own
  // native moves under off still arm one: compare off only where both fire.
  if (!::sigvisor::testing::LaneLacks(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints)) {
    EXPECT_EQ(off.result.console, pv.result.console);
  }
  EXPECT_EQ(patch.result.console, pv.result.console);
  ExpectPrinted(pv.result, "gs_base", 4 << 12);  // the last wrmsr took effect
  // Without the page the same routines make native moves, which patch traps.
  const PhaseResult* dr7 = FindPhase(patch.result, "dr7");
  ASSERT_NE(dr7, nullptr);
  EXPECT_EQ(dr7->traps.by_kind, (TrapCounts{{"dr_write", 5}}));
  EXPECT_EQ(dr7->exits, (ExitCounts{{"hlt", 5}}));
  EXPECT_EQ(patch.result.traps.hypercalls(), 0u);
  EXPECT_EQ(off.result.traps.total(), 0u);
}

TEST(TrapPvTest, AnExecuteBreakpointEnabledThroughThePageFiresAsWithPatchAndOff) {
  SIGVISOR_REQUIRE_KVM(kvm);
  SIGVISOR_SKIP_IF_LANE_LACKS(::sigvisor::testing::LaneLimit::kNestedHardwareBreakpoints);
  const ElfImage guest = LoadTestGuest("trap_pv");
  for (TrapMechanism trap : {TrapMechanism::kOff, TrapMechanism::kPatch, TrapMechanism::kPv}) {
    SCOPED_TRACE(std::string(TrapMechanismName(trap)));
    x86::MachineReport report = Boot(*kvm, guest, trap, 1);
    const RunResult& r = report.result;
    ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
    ExpectPrinted(r, "bp_vector", 1);      // #DB, to the guest's own handler
    ExpectPrinted(r, "bp_rip_offset", 0);  // at the breakpoint, before the instruction
    EXPECT_NE(r.console.find("bp_dr6=0x00000000ffff0ff1"), std::string::npos) << r.console;
    EXPECT_EQ(r.console.find("bp_not_taken"), std::string::npos);
    const PhaseResult* bp = FindPhase(r, "breakpoint");
    ASSERT_NE(bp, nullptr);
    if (trap == TrapMechanism::kPv) {
      // DR0, DR7 on, DR6 and DR7 cleared; DR6 read natively. The DR0 write needs no
      // load (breakpoint 0 is off then); the others one each, as under patch.
      EXPECT_EQ(bp->traps.by_kind, (TrapCounts{{"dr_write", 4}}));
      EXPECT_EQ(bp->traps.dr_loads, 3u);
      EXPECT_EQ(bp->traps.hypercalls, 3u);
      EXPECT_EQ(bp->exits, (ExitCounts{{"io", 3}}));
    } else if (trap == TrapMechanism::kPatch) {
      EXPECT_EQ(bp->traps.by_kind, (TrapCounts{{"dr_read", 1}, {"dr_write", 4}}));
      EXPECT_EQ(bp->traps.dr_loads, 3u);
    }
  }
}

TEST(TrapPvTest, NeedsAKernelThatSpeaksThePage) {
  SIGVISOR_REQUIRE_KVM(kvm);
  x86::MachineConfig config;
  config.trap = TrapMechanism::kPv;
  absl::StatusOr<x86::MachineReport> report =
      x86::BootAndRun(*kvm, LoadTestGuest("trap_dr"), config);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("debugreg=pv"), std::string::npos) << report.status();
}

// hw-gd where the host supports it (hardware KVM): the same counts as patch.
TEST(TrapMechanismTest, HardwareGeneralDetectWhereTheProbeSaysItWorks) {
  SIGVISOR_REQUIRE_KVM(kvm);
  ProbeOptions quick;
  quick.iterations = 1;
  quick.repeats = 1;
  absl::StatusOr<ProbeReport> probe = RunProbe(*kvm, quick);
  ASSERT_TRUE(probe.ok()) << probe.status();
  for (const MechanismResult& m : probe->mechanisms) {
    if (m.name == "vmm_dr7_gd" && !m.works) {
      GTEST_SKIP() << "this host's DR7.GD does not exit (" << m.note << ")";
    }
  }
  const ElfImage guest = LoadTestGuest("trap_dr");
  x86::MachineReport off = Boot(*kvm, guest, TrapMechanism::kOff, 5);
  x86::MachineReport gd = Boot(*kvm, guest, TrapMechanism::kHwGd, 5);
  ASSERT_EQ(gd.result.outcome, Outcome::kExited) << gd.result.diagnosis;
  EXPECT_EQ(off.result.console, gd.result.console);
  const PhaseResult* dr7 = FindPhase(gd.result, "dr7");
  ASSERT_NE(dr7, nullptr);
  EXPECT_EQ(dr7->traps.by_kind, (TrapCounts{{"dr_read", 5}, {"dr_write", 5}}));
}

TEST(TrapSitesTest, TheScannerFindsEverySiteOfTheGuests) {
  absl::StatusOr<trap::Decoder> decoder = trap::Decoder::Create();
  ASSERT_TRUE(decoder.ok());
  const ElfImage seg = LoadTestGuest("trap_seg");
  absl::StatusOr<trap::SiteTable> sites = trap::ScanImage(seg, *decoder);
  ASSERT_TRUE(sites.ok()) << sites.status();
  // 12 mov to a segment register (3 faulting), 2 pop, lfs, lss, lgs, swapgs x2,
  // wrfsbase, wrgsbase, 3 wrmsr.
  EXPECT_EQ(sites->size(), 23u);
  const trap::TrapSite* mov_fs = sites->Find(seg.symbols().Find("mov_fs_site")->addr);
  ASSERT_NE(mov_fs, nullptr);
  EXPECT_EQ(mov_fs->symbol, "mov_fs_site");
  EXPECT_EQ(mov_fs->text, "movl %eax, %fs");
  EXPECT_EQ(mov_fs->bytes, (std::vector<uint8_t>{0x8e, 0xe0}));
  EXPECT_EQ(mov_fs->physical, mov_fs->address);  // linked where it loads

  const ElfImage dr = LoadTestGuest("trap_dr");
  sites = trap::ScanImage(dr, *decoder);
  ASSERT_TRUE(sites.ok());
  const trap::TrapSite* write = sites->Find(dr.symbols().Find("dr7_write_site")->addr);
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->text, "movq %rax, %dr7");
  for (const trap::TrapSite& site : sites->sites()) {
    EXPECT_TRUE(site.insn.op == trap::TrapOp::kMovToDr || site.insn.op == trap::TrapOp::kMovFromDr)
        << site.text;
  }
  // A guest without any: no sites.
  sites = trap::ScanImage(LoadTestGuest("exit_with"), *decoder);
  ASSERT_TRUE(sites.ok());
  EXPECT_TRUE(sites->empty());
}

TEST(TrapSitesTest, TheBundledKernelRunsTheSameWithPatchAsWithout) {
  SIGVISOR_REQUIRE_KVM(kvm);
  ElfImage kernel = testing::BundledKernel();
  x86::MachineConfig config;
  config.trap = TrapMechanism::kPatch;
  absl::StatusOr<x86::MachineReport> report = x86::BootAndRun(*kvm, kernel, config);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->result.outcome, Outcome::kExited) << report->result.diagnosis;
  EXPECT_EQ(report->result.exit_code, 0);
  // Whatever sites the kernel has, each trap was one of them and one hlt exit.
  uint64_t trap_exits = 0;
  for (const auto& [key, stats] : report->result.ledger.by_detail()) {
    if (key.first == "hlt") trap_exits += stats.count;
  }
  EXPECT_EQ(trap_exits, report->result.traps.total());
}

}  // namespace
}  // namespace sigvisor
