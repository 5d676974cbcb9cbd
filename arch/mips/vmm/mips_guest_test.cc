// The MIPS guest kernel (arch/mips/guest, built by guest-kit/build/mips.bzl) on the
// interpreter: it boots on 1 and 4 cores, runs its workloads and exits 0, and seed
// 004's counts per signal are exact: tramp=stack flushes the trampoline's line on
// every core and sends an IPI to each other core; tramp=vdso flushes nothing and
// sends nothing.
#include <cstdio>
#include <fstream>
#include <iterator>
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
};

TEST(MipsGuestTest, SignalTrampolineCountsAreExact) {
  for (const Case& c : {Case{"baseline", 1, 1, 0}, Case{"baseline", 4, 4, 3},
                        Case{"tramp-vdso", 1, 0, 0}, Case{"tramp-vdso", 4, 0, 0}}) {
    SCOPED_TRACE(c.variant + ", " + std::to_string(c.cores) + " cores");
    MipsMachineConfig config;
    config.cores = c.cores;
    absl::StatusOr<MipsMachineReport> report = BootAndRun(Image(c.variant), config);
    ASSERT_TRUE(report.ok()) << report.status();
    const RunResult& r = report->result;
    ASSERT_EQ(r.outcome, Outcome::kExited) << r.diagnosis << "\n" << r.console;
    EXPECT_EQ(r.exit_code, 0) << r.console;
    EXPECT_EQ(report->total.bus_errors, 0u);
    const PhaseResult* phase = FindPhase(r, "sig_hndl");
    ASSERT_NE(phase, nullptr) << r.console;
    ASSERT_GT(phase->ops, 0u);
    EXPECT_EQ(phase->kvm_stats.at("icache_lines_flushed"), c.lines_per_signal * phase->ops);
    EXPECT_EQ(phase->kvm_stats.at("ipis_sent"), c.ipis_per_signal * phase->ops);
    std::printf("%s, %d cores: sig_hndl %.1f instructions, %.1f modelled cycles per signal\n",
                c.variant.c_str(), c.cores,
                static_cast<double>(phase->kvm_stats.at("instructions")) / phase->ops,
                static_cast<double>(phase->kvm_stats.at("modelled_cycles")) / phase->ops);
  }
}

}  // namespace
}  // namespace sigvisor::mips
