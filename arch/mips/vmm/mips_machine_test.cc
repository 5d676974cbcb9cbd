// Whole machines: ELF32 images built from assembly (testdata/) booted through
// BootAndRun on one and several cores; the ELF loader's checks; the interpreter's
// speed as a log line (never asserted).
#include "arch/mips/vmm/mips_machine.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gtest/gtest.h"

namespace sigvisor::mips {
namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

MipsElfImage Image(const std::string& name) {
  absl::StatusOr<MipsElfImage> image =
      MipsElfImage::Parse(ReadFile("arch/mips/vmm/testdata/" + name + ".elf"));
  EXPECT_TRUE(image.ok()) << image.status();
  return *image;
}

TEST(MipsMachineTest, SmokeKernelPassesItsChecks) {
  for (int cores : {1, 2, 4}) {
    MipsMachineConfig config;
    config.cores = cores;
    config.memory_bytes = 16 << 20;
    absl::StatusOr<MipsMachineReport> report = BootAndRun(Image("smoke"), config);
    ASSERT_TRUE(report.ok()) << report.status();
    const RunResult& r = report->result;
    EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
    EXPECT_EQ(r.exit_code, 0) << "check " << r.exit_code << " failed";
    EXPECT_EQ(r.console, "boot\ndone\n");
    EXPECT_EQ(report->total.syscalls, 102u);
    EXPECT_EQ(report->total.interrupts, 1u);
    EXPECT_EQ(report->total.tlb_refills, 0u);
    EXPECT_EQ(report->cores[0].exceptions, 102u + 1u + 1u);  // + the delay-slot AdEL
    EXPECT_EQ(report->total.ipis_sent, 0u);
    EXPECT_EQ(report->cores.size(), static_cast<size_t>(cores));
    for (int i = 1; i < cores; ++i) EXPECT_EQ(report->cores[i].exceptions, 0u);
  }
}

TEST(MipsMachineTest, SmokeKernelCountsAreDeterministic) {
  MipsMachineConfig config;
  config.cores = 2;
  auto a = BootAndRun(Image("smoke"), config);
  auto b = BootAndRun(Image("smoke"), config);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->total.instructions, b->total.instructions);
  EXPECT_EQ(a->total.modelled_cycles(), b->total.modelled_cycles());
}

TEST(MipsMachineTest, InterpreterSpeed) {
  MipsMachineConfig config;
  absl::StatusOr<MipsMachineReport> report = BootAndRun(Image("bench"), config);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->result.outcome, Outcome::kExited) << report->result.diagnosis;
  // 10 million iterations of 8 instructions, plus the set-up and the exit.
  EXPECT_GT(report->total.instructions, 80'000'000u);
  EXPECT_LT(report->total.instructions, 80'000'100u);
  std::printf(
      "mips interpreter: %llu guest instructions in %.3f s wall = %.1f M instructions/s "
      "(%.1f M per CPU second)\n",
      static_cast<unsigned long long>(report->total.instructions), report->result.run_ns / 1e9,
      report->instructions_per_second / 1e6, report->instructions_per_cpu_second / 1e6);
}

TEST(MipsMachineTest, RefusesBadConfigurationsAndImages) {
  MipsMachineConfig config;
  config.memory_bytes = 512ull << 20;
  EXPECT_FALSE(BootAndRun(Image("smoke"), config).ok());
  config.memory_bytes = 1 << 20;  // the image at 1 MiB does not fit in 1 MiB
  EXPECT_FALSE(BootAndRun(Image("smoke"), config).ok());
  config.memory_bytes = 16 << 20;
  config.cores = 0;
  EXPECT_FALSE(BootAndRun(Image("smoke"), config).ok());

  std::vector<uint8_t> bytes = ReadFile("arch/mips/vmm/testdata/smoke.elf");
  ASSERT_GT(bytes.size(), 64u);
  for (size_t cut : {0ul, 10ul, 51ul, 60ul}) {
    std::vector<uint8_t> shorter(bytes.begin(), bytes.begin() + static_cast<long>(cut));
    EXPECT_FALSE(MipsElfImage::Parse(shorter).ok()) << cut;
  }
  std::vector<uint8_t> wrong_machine = bytes;
  wrong_machine[18] = 62;  // EM_X86_64
  EXPECT_FALSE(MipsElfImage::Parse(wrong_machine).ok());
  std::vector<uint8_t> big_endian = bytes;
  big_endian[5] = 2;
  EXPECT_FALSE(MipsElfImage::Parse(big_endian).ok());
  std::vector<uint8_t> huge_segment = bytes;
  const uint32_t phoff = 52;
  const uint32_t filesz = 0xfffff000u;
  std::memcpy(&huge_segment[phoff + 16], &filesz, 4);
  EXPECT_FALSE(MipsElfImage::Parse(huge_segment).ok());
}

TEST(MipsMachineTest, SymbolsNameTheEntry) {
  MipsElfImage image = Image("smoke");
  EXPECT_EQ(image.Symbolize(image.entry()), "_start");
  EXPECT_EQ(image.Symbolize(image.entry() + 8), "_start+0x8");
}

}  // namespace
}  // namespace sigvisor::mips
