// Fuzzes the hypercall dispatcher and the run loop over random guest memory: the
// input's first 16 KiB become guest RAM (argument blocks, console bytes, marker
// names, all guest-controlled), the rest a sequence of VM exits replayed through a
// scripted backend into the Session: hypercalls with random numbers and argument
// addresses, serial and debug-exit port accesses, string I/O, MMIO, and other exit
// kinds. The run must end (never hang) and its result must stay within its bounds.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "devices/hypercall.h"
#include "devices/pc/debug_exit.h"
#include "devices/serial16550.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/bus.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/fake_backend.h"
#include "vmm/run/guest_protocol.h"
#include "vmm/run/hypercall_table.h"
#include "vmm/run/session.h"

namespace {

constexpr size_t kRam = 16 << 10;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sigvisor::FakeBackend;
  auto memory = sigvisor::GuestMemory::Create(kRam);
  if (!memory.ok()) std::abort();
  const size_t ram_bytes = std::min(size, kRam);
  (void)memory->Write(0, {data, ram_bytes});
  data += ram_bytes;
  size -= ram_bytes;

  std::vector<FakeBackend::Step> steps;
  // Each exit: kind, address byte, size byte, 4 bytes of data.
  while (size >= 7 && steps.size() < 256) {
    FakeBackend::Step step;
    const uint8_t kind = data[0], where = data[1], width = data[2];
    uint32_t value;
    std::memcpy(&value, data + 3, 4);
    data += 7;
    size -= 7;
    step.size = uint32_t{1} << (width & 3);  // 1, 2, 4, 8
    step.is_write = (width & 4) == 0;
    step.count = (width & 8) ? 1 + ((width >> 4) & 3) : 1;  // string I/O
    step.bytes.resize(size_t{step.size} * step.count);
    for (size_t i = 0; i < step.bytes.size(); ++i) step.bytes[i] = uint8_t(value >> (8 * (i % 4)));
    switch (kind % 6) {
      case 0: step.address = SIGVISOR_HC_PORT_BASE + (where & 0x1f); break;  // hypercalls
      case 1: step.address = 0x3f8 + (where & 7); break;                       // serial
      case 2: step.address = 0xf4 + (where & 3); break;                        // debug exit
      case 3: step.address = where; break;                                     // anything
      case 4:
        step.kind = sigvisor::ExitKind::kMmio;
        step.address = 0xfee00000u + where;
        step.count = 1;
        step.bytes.resize(step.size);
        break;
      default:
        step.kind = static_cast<sigvisor::ExitKind>(where % 10);
        step.raw_detail = value;
        break;
    }
    steps.push_back(std::move(step));
  }
  FakeBackend::Step end;  // a run that is still going ends in a triple fault
  end.kind = sigvisor::ExitKind::kShutdown;
  steps.push_back(end);

  FakeBackend backend(std::move(steps));
  sigvisor::Bus bus;
  sigvisor::SessionOptions options;
  options.timeout = absl::Seconds(5);
  options.max_console_bytes = 4096;
  options.max_output_bytes = 8192;
  uint64_t streamed = 0;
  options.console_sink = [&](std::string_view text) { streamed += text.size(); };
  options.describe = [](const sigvisor::CpuLocation&) { return std::string("here"); };
  sigvisor::HypercallTable table;
  sigvisor::HypercallDevice hypercalls(table);
  options.hypercalls = &hypercalls;
  sigvisor::Session session(backend, bus, options);
  sigvisor::GuestProtocol protocol(
      *memory, [&session](std::string_view text) { session.ConsoleWrite(text); });
  protocol.set_orders("workload=hello ops=1");  // written wherever an orders call points
  if (!protocol.Register(table).ok()) std::abort();
  uint64_t serial_out = 0;
  sigvisor::Serial16550 serial([&](std::string_view text) { serial_out += text.size(); });
  sigvisor::DebugExit debug_exit;
  (void)bus.Register(sigvisor::AddressSpace::kPort, SIGVISOR_HC_PORT_BASE,
                     sigvisor::HypercallDevice::kPortCount, &hypercalls);
  (void)bus.Register(sigvisor::AddressSpace::kPort, 0x3f8, 8, &serial);
  (void)bus.Register(sigvisor::AddressSpace::kPort, 0xf4, sigvisor::DebugExit::kPortCount,
                     &debug_exit);
  sigvisor::RunResult result = session.Run();
  if (result.outcome == sigvisor::Outcome::kTimeout) std::abort();  // a scripted run never hangs
  if (result.console.size() > options.max_console_bytes) std::abort();
  if (streamed > options.max_output_bytes) std::abort();
  if (result.warnings.size() > 64) std::abort();
  for (const auto& phase : result.phases) {
    if (phase.name.size() > sizeof(sigvisor_hc_phase_begin{}.name)) std::abort();
  }
  return 0;
}
