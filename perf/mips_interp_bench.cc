// The MIPS interpreter's speed (issue 17 goal 1), with Google Benchmark:
//   - TightLoop: testdata/bench.S's loop (a load, a store, ALU ops, a branch with a
//     store in its delay slot) on one core through MipsSystem, as the backend runs it;
//     guest_ips is guest instructions per CPU second (goal: 300 M).
//   - BenchImage: the same loop as testdata/bench.elf booted through the whole machine.
//   - SelfTests: the bundled kernel's `workload=selftest case=all` booted to its exit
//     (goal: 200 M guest instructions per CPU second).
//   - VdsoSignal: lat_sig's sig_hndl with tramp=vdso on one core; sig_hndl_ns is wall
//     time per signal (goal: at most 5 us).
// Each runs twice: `blocks`, the interpreter as it runs (the block engine), and
// `reference`, the reference interpreter alone (MipsCore::set_block_engine(false)):
// the engine's gain, measured side by side in one run.
//
//   bazel run -c opt //perf:mips_interp_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "arch/mips/vmm/mips_encode.h"
#include "arch/mips/vmm/mips_machine.h"
#include "arch/mips/vmm/mips_system.h"

namespace sigvisor::mips {
namespace {

using namespace encode;  // NOLINT: register names

void BM_MipsTightLoop(benchmark::State& state, bool block_engine) {
  std::vector<uint8_t> ram(1 << 20);
  auto system = *MipsSystem::Create(ram, 1, nullptr);
  constexpr uint32_t kCode = 0x80001000, kScratch = 0x80002000;
  const uint32_t loop[] = {
      Lw(kT1, 0, kS0),        Addu(kT0, kT0, kS1), Xor(kT2, kT0, kT1), Sw(kT2, 4, kS0),
      Sll(kT3, kT2, 3),       Addiu(kS1, kS1, -1), Bne(kS1, kZero, -7), Sw(kT3, 0, kS0),
  };
  std::memcpy(&ram[kCode & 0x1fffffff], loop, sizeof(loop));
  MipsCore& core = system->core(0);
  core.set_block_engine(block_engine);
  core.Reset(kCode);
  core.set_gpr(kS0, kScratch);
  core.set_gpr(kS1, 0x7fffffff);  // never reaches 0 here
  constexpr uint64_t kSteps = 10'000'000;
  uint64_t instructions = 0;
  for (auto _ : state) {
    const uint64_t before = core.counters().instructions;
    system->Run(kSteps);
    instructions += core.counters().instructions - before;
  }
  state.counters["guest_ips"] = benchmark::Counter(static_cast<double>(instructions),
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_MipsTightLoop, blocks, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MipsTightLoop, reference, false)->Unit(benchmark::kMillisecond);

MipsElfImage ReadImage(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return *MipsElfImage::Parse(
      std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
}
MipsElfImage Kernel(const std::string& variant) {
  return ReadImage("guest-kit/kernel-mips-" + variant + ".elf");
}

// The same loop as a booted image through the whole machine (backend, session, run
// loop): what mips_machine_test's InterpreterSpeed prints, 80 M instructions a run.
void BM_MipsBenchImage(benchmark::State& state, bool block_engine) {
  const MipsElfImage image = ReadImage("arch/mips/vmm/testdata/bench.elf");
  MipsMachineConfig config;
  config.block_engine = block_engine;
  uint64_t instructions = 0;
  for (auto _ : state) {
    absl::StatusOr<MipsMachineReport> report = BootAndRun(image, config);
    if (!report.ok() || report->result.outcome != Outcome::kExited) {
      state.SkipWithError("bench.elf did not exit");
      return;
    }
    instructions += report->total.instructions;
  }
  state.counters["guest_ips"] = benchmark::Counter(static_cast<double>(instructions),
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_MipsBenchImage, blocks, true)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_MipsBenchImage, reference, false)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

void BM_MipsSelfTests(benchmark::State& state, bool block_engine) {
  const MipsElfImage image = Kernel("baseline");
  MipsMachineConfig config;
  config.block_engine = block_engine;
  config.cmdline = "workload=selftest case=all";
  uint64_t instructions = 0, exceptions = 0;
  double cpu_ips = 0;
  for (auto _ : state) {
    absl::StatusOr<MipsMachineReport> report = BootAndRun(image, config);
    if (!report.ok() || report->result.outcome != Outcome::kExited) {
      state.SkipWithError("the self-tests did not exit");
      return;
    }
    instructions += report->total.instructions;
    exceptions += report->total.exceptions;
    cpu_ips = report->instructions_per_cpu_second;
  }
  // How often the kernel's paths leave straight-line code: each exception entry also
  // drops the core's soft TLB and fetch page.
  state.counters["insns_per_exception"] =
      static_cast<double>(instructions) / static_cast<double>(std::max<uint64_t>(exceptions, 1));
  state.counters["guest_ips"] = benchmark::Counter(static_cast<double>(instructions),
                                                   benchmark::Counter::kIsRate);
  state.counters["run_guest_ips"] = cpu_ips;  // the last run's, over its run loop only
}
BENCHMARK_CAPTURE(BM_MipsSelfTests, blocks, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MipsSelfTests, reference, false)->Unit(benchmark::kMillisecond);

void BM_MipsVdsoSignal(benchmark::State& state, bool block_engine) {
  const MipsElfImage image = Kernel("tramp-vdso");
  MipsMachineConfig config;
  config.block_engine = block_engine;
  config.cores = 1;
  config.cmdline = "workload=lat_sig ops=2000";
  uint64_t ops = 0, wall_ns = 0;
  for (auto _ : state) {
    absl::StatusOr<MipsMachineReport> report = BootAndRun(image, config);
    if (!report.ok()) {
      state.SkipWithError("lat_sig did not boot");
      return;
    }
    for (const PhaseResult& p : report->result.phases) {
      if (p.name != "sig_hndl") continue;
      ops += p.ops;
      wall_ns += p.wall_ns;
    }
  }
  if (ops == 0) {
    state.SkipWithError("no sig_hndl phase");
    return;
  }
  state.counters["sig_hndl_ns"] = static_cast<double>(wall_ns) / static_cast<double>(ops);
}
BENCHMARK_CAPTURE(BM_MipsVdsoSignal, blocks, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MipsVdsoSignal, reference, false)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sigvisor::mips

BENCHMARK_MAIN();
