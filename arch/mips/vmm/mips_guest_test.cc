// The MIPS guest kernel (arch/mips/guest, built by guest-kit/build/mips.bzl) on the
// interpreter: it boots on 1 and 4 cores, runs its workloads and exits 0, and seed
// 004's counts per signal are exact: tramp=stack flushes the trampoline's line on
// every core and sends an IPI to each other core; tramp=vdso flushes nothing, sends
// nothing and returns through exactly one fetch from the VMM's vdso page, the same
// host page behind every core. A store to the page faults in the guest, is counted
// and changes nothing; booted without the VMM's page the kernel uses its own copy.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "arch/mips/vmm/mips_machine.h"
#include "gtest/gtest.h"

namespace sigvisor::mips {
namespace {

MipsElfImage Image(const std::string& variant) {
  std::ifstream in("guest-kit/kernel-mips-" + variant + ".elf", std::ios::binary);
  absl::StatusOr<MipsElfImage> image = MipsElfImage::Parse(
      std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  EXPECT_TRUE(image.ok()) << image.status();
  return *image;
}

const PhaseResult* FindPhase(const RunResult& r, const std::string& name) {
  for (const PhaseResult& p : r.phases) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

struct Case {
  std::string variant;
  int cores;
  uint64_t lines_per_signal;
  uint64_t ipis_per_signal;
  uint64_t vdso_fetches_per_signal;
};

// Boots `variant` with `config` and expects a clean exit.
MipsMachineReport BootOk(const std::string& variant, const MipsMachineConfig& config) {
  absl::StatusOr<MipsMachineReport> report = BootAndRun(Image(variant), config);
  EXPECT_TRUE(report.ok()) << report.status();
  if (!report.ok()) return {};
  const RunResult& r = report->result;
  EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis << "\n" << r.console;
  EXPECT_EQ(r.exit_code, 0) << r.console;
  EXPECT_EQ(report->total.bus_errors, 0u);
  return *std::move(report);
}

TEST(MipsGuestTest, SignalTrampolineCountsAreExact) {
  for (const Case& c : {Case{"baseline", 1, 1, 0, 0}, Case{"baseline", 4, 4, 3, 0},
                        Case{"tramp-vdso", 1, 0, 0, 1}, Case{"tramp-vdso", 4, 0, 0, 1}}) {
    SCOPED_TRACE(c.variant + ", " + std::to_string(c.cores) + " cores");
    MipsMachineConfig config;
    config.cores = c.cores;
    const MipsMachineReport report = BootOk(c.variant, config);
    const RunResult& r = report.result;
    const PhaseResult* phase = FindPhase(r, "sig_hndl");
    ASSERT_NE(phase, nullptr) << r.console;
    ASSERT_GT(phase->ops, 0u);
    EXPECT_EQ(phase->kvm_stats.at("icache_lines_flushed"), c.lines_per_signal * phase->ops);
    EXPECT_EQ(phase->kvm_stats.at("ipis_sent"), c.ipis_per_signal * phase->ops);
    // Exactly one trampoline per signal from the VMM's page: the markers never touch
    // it, so the count is exact whatever the markers' own cost does to the others.
    EXPECT_EQ(phase->kvm_stats.at("vdso_fetches"), c.vdso_fetches_per_signal * phase->ops);
    EXPECT_EQ(phase->kvm_stats.at("vdso_writes"), 0u);
    if (const PhaseResult* divzero = FindPhase(r, "divzero")) {  // a handler per op too
      EXPECT_EQ(divzero->kvm_stats.at("vdso_fetches"), c.vdso_fetches_per_signal * divzero->ops);
    }
    // One host page at the address the boot info named, behind every core.
    EXPECT_TRUE(report.vdso.supplied);
    EXPECT_EQ(report.vdso.address, kVdsoAddress);
    EXPECT_EQ(report.vdso.host_pages, 1);
    EXPECT_TRUE(report.vdso.intact);
    EXPECT_EQ(report.total.vdso_writes, 0u);
    std::printf("%s, %d cores: sig_hndl %.1f instructions, %.1f modelled cycles per signal\n",
                c.variant.c_str(), c.cores,
                static_cast<double>(phase->kvm_stats.at("instructions")) / phase->ops,
                static_cast<double>(phase->kvm_stats.at("modelled_cycles")) / phase->ops);
  }
}

// Counts per op are exact, as on x86-64: N and 2N ops give the same per op, every
// counter, on one core and on several. The interpreter counts user instructions too,
// so the markers' own user code around each phase's loop (phase_begin's return, the
// loop's entry and exit, the call to phase_end) must be netted out as exactly as
// their kernel path is. The phases whose every operation costs the same: on MIPS
// pipe_rw's kernel copies cost what the pipe's position makes them, and sigpingpong's
// two address spaces share a TLB refilled at random, so theirs vary a little from op
// to op whatever the markers do.
TEST(MipsGuestTest, CountsPerOpAreExactForNAnd2N) {
  const std::set<std::string> exact = {"divzero", "sig_inst", "sig_hndl"};
  for (int cores : {1, 4}) {
    SCOPED_TRACE(std::to_string(cores) + " cores");
    MipsMachineConfig config;
    config.cores = cores;
    config.cmdline = "workload=summary ops=10";
    const MipsMachineReport n = BootOk("baseline", config);
    config.cmdline = "workload=summary ops=20";
    const MipsMachineReport twice = BootOk("baseline", config);
    ASSERT_EQ(n.result.phases.size(), twice.result.phases.size());
    ASSERT_GE(n.result.phases.size(), 5u) << n.result.console;
    size_t checked = 0;
    for (size_t i = 0; i < n.result.phases.size(); ++i) {
      const PhaseResult& a = n.result.phases[i];
      const PhaseResult& b = twice.result.phases[i];
      if (!exact.count(a.name)) continue;
      ++checked;
      SCOPED_TRACE(a.name);
      ASSERT_EQ(a.name, b.name);
      EXPECT_EQ(a.ops * 2, b.ops);
      EXPECT_GT(a.kvm_stats.at("instructions"), 0u);
      for (const auto& [name, value] : a.kvm_stats) {
        EXPECT_EQ(value * 2, b.kvm_stats.at(name)) << name;
      }
    }
    EXPECT_EQ(checked, exact.size());
    for (const std::string& warning : n.result.warnings) {
      for (const std::string& name : exact) {
        EXPECT_EQ(warning.find("'" + name + "'"), std::string::npos) << warning;
      }
    }
  }
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The self-tests' vdso case stores once to the page at its user address: the guest
// takes SIGSEGV (SEGV_ACCERR) as for any read-only page, the VMM counts the store, and
// its copy is unchanged (the case also reads the trampoline back before and after).
TEST(MipsGuestTest, AStoreToTheVdsoFaultsInTheGuestAndIsCounted) {
  for (const std::string variant : {"baseline", "tramp-vdso"}) {
    for (int cores : {1, 4}) {
      SCOPED_TRACE(variant + ", " + std::to_string(cores) + " cores");
      MipsMachineConfig config;
      config.cores = cores;
      config.cmdline = "workload=selftest case=vdso";
      const MipsMachineReport report = BootOk(variant, config);
      EXPECT_EQ(Count(report.result.console, "PASS vdso"), 1u) << report.result.console;
      EXPECT_EQ(report.total.vdso_writes, 1u);
      EXPECT_EQ(report.total.tlb_modified, 1u);  // the fault the guest saw
      EXPECT_TRUE(report.vdso.supplied);
      EXPECT_TRUE(report.vdso.intact);
    }
  }
}

// Told not to supply its page, the machine names none in the boot info, and the
// kernel maps its own copy (as under QEMU): every self-test passes, tramp=vdso's
// signals still return through a vdso trampoline, and none of it is the VMM's.
TEST(MipsGuestTest, WithoutTheVmmsPageTheKernelsOwnCopyServes) {
  MipsMachineConfig config;
  config.vdso = false;
  config.cmdline = "workload=selftest case=all";
  MipsMachineReport report = BootOk("tramp-vdso", config);
  EXPECT_EQ(Count(report.result.console, "PASS "), 13u) << report.result.console;
  EXPECT_EQ(Count(report.result.console, "FAIL "), 0u) << report.result.console;
  EXPECT_FALSE(report.vdso.supplied);
  EXPECT_EQ(report.vdso.host_pages, 0);
  EXPECT_EQ(report.total.vdso_fetches, 0u);
  EXPECT_EQ(report.total.vdso_writes, 0u);  // the vdso case's store hit the kernel's copy

  for (int cores : {1, 4}) {
    config.cores = cores;
    config.cmdline = "workload=lat_sig ops=25";
    report = BootOk("tramp-vdso", config);
    const PhaseResult* phase = FindPhase(report.result, "sig_hndl");
    ASSERT_NE(phase, nullptr) << report.result.console;
    EXPECT_EQ(phase->ops, 25u);
    EXPECT_EQ(phase->kvm_stats.at("vdso_fetches"), 0u);
    EXPECT_EQ(phase->kvm_stats.at("icache_lines_flushed"), 0u);
    EXPECT_EQ(phase->kvm_stats.at("ipis_sent"), 0u);
  }
}

// With the page supplied every self-test passes too, the vdso case included.
TEST(MipsGuestTest, SelfTestsPassWithTheVmmsPage) {
  for (const std::string variant : {"baseline", "tramp-vdso"}) {
    SCOPED_TRACE(variant);
    MipsMachineConfig config;
    config.cmdline = "workload=selftest case=all";
    const MipsMachineReport report = BootOk(variant, config);
    EXPECT_EQ(Count(report.result.console, "PASS "), 13u) << report.result.console;
    EXPECT_EQ(Count(report.result.console, "FAIL "), 0u) << report.result.console;
    EXPECT_TRUE(report.vdso.supplied);
    EXPECT_TRUE(report.vdso.intact);
    EXPECT_EQ(report.total.vdso_writes, 1u);  // the vdso case's one store
  }
}

}  // namespace
}  // namespace sigvisor::mips
