// Host-side micro-benchmarks (Google Benchmark) of the VMM's per-exit work: what
// the ledger, the bus and a hypercall cost the VMM on every exit it handles.
//
//   bazel run -c opt //perf:vmm_microbench
#include <benchmark/benchmark.h>

#include <cstring>

#include "devices/hypercall.h"
#include "devices/serial16550.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/ledger/exit_ledger.h"
#include "vmm/machine/bus.h"
#include "vmm/machine/guest_memory.h"

namespace sigvisor {
namespace {

void BM_LedgerRecord(benchmark::State& state) {
  ExitLedger ledger;
  for (auto _ : state) ledger.Record("io", "port 0x501 out (hypercall console_write)", 1000);
  benchmark::DoNotOptimize(ledger.total());
}
BENCHMARK(BM_LedgerRecord);

void BM_BusSerialWrite(benchmark::State& state) {
  Serial16550 serial(nullptr);
  Bus bus;
  if (!bus.Register(AddressSpace::kPort, 0x3f8, Serial16550::kPortCount, &serial).ok()) return;
  uint8_t byte = 'x';
  for (auto _ : state) benchmark::DoNotOptimize(bus.Write(AddressSpace::kPort, 0x3f8, {&byte, 1}));
}
BENCHMARK(BM_BusSerialWrite);

struct NullHandler : HypercallHandler {
  void OnConsoleWrite(std::string_view) override {}
  void OnExit(int64_t) override {}
  void OnPhaseBegin(std::string, uint64_t, uint64_t, bool, std::optional<uint64_t>) override {}
  void OnPhaseEnd(uint64_t) override {}
  void OnTimeReport(std::string, uint64_t, uint64_t) override {}
  void OnPanic(std::string, uint64_t, uint64_t) override {}
};

void BM_HypercallConsoleWrite(benchmark::State& state) {
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(1 << 20);
  if (!memory.ok()) return;
  NullHandler handler;
  HypercallDevice device(*memory, handler);
  if (!memory->WriteObject(0x1000, sigvisor_hc_console_write{0x2000, 64}).ok()) return;
  const uint32_t args = 0x1000;
  uint8_t bytes[4];
  std::memcpy(bytes, &args, 4);
  for (auto _ : state) benchmark::DoNotOptimize(device.Write(SIGVISOR_HC_CONSOLE_WRITE, bytes));
}
BENCHMARK(BM_HypercallConsoleWrite);

}  // namespace
}  // namespace sigvisor

BENCHMARK_MAIN();
