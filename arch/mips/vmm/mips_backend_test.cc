// The interpreter behind the unchanged Session: hypercalls through the MMIO window,
// the UART and SOFTRES as MMIO exits, bus errors delivered to the guest, `wait` with
// nothing to wake it, the watchdog's kick, and the stats by name.
#include "arch/mips/vmm/mips_backend.h"

#include <cstring>
#include <memory>
#include <string>

#include "arch/mips/vmm/mips_encode.h"
#include "devices/malta/hypercall_mmio.h"
#include "devices/malta/malta_softres.h"
#include "devices/serial16550.h"
#include "gtest/gtest.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/bus.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/guest_protocol.h"
#include "vmm/run/hypercall_table.h"
#include "vmm/run/session.h"

namespace sigvisor::mips {
namespace {

using namespace encode;  // NOLINT: the instruction mnemonics

constexpr uint32_t kCode = 0x80001000;
constexpr uint64_t kConsoleArgs = 0x3000;
constexpr uint64_t kConsoleText = 0x3100;
constexpr uint64_t kExitArgs = 0x3200;

// One core, 1 MiB, the MIPS machine's devices, a Session; `program` at kCode and
// `handler` at the general exception vector.
struct Rig {
  explicit Rig(std::vector<uint32_t> program, std::vector<uint32_t> handler = {},
               absl::Duration timeout = absl::Seconds(30))
      : memory(*GuestMemory::Create(1 << 20)) {
    Put(kCode & 0x1fffffff, program);
    Put(0x180, handler.empty() ? std::vector<uint32_t>{Beq(0, 0, -1), Nop()} : handler);
    const Bus& devices = bus;
    system = *MipsSystem::Create(*memory.Span(0, memory.size()), 1, [&devices](uint64_t pa) {
      return devices.Find(AddressSpace::kMmio, pa) != nullptr;
    });
    system->core(0).Reset(kCode);
    backend = std::make_unique<MipsBackend>(*system);
    window = std::make_unique<HypercallMmioWindow>(hypercalls);
    SessionOptions options;
    options.timeout = timeout;
    options.hypercalls = window.get();
    session = std::make_unique<Session>(*backend, bus, options);
    auto console = [this](std::string_view text) { session->ConsoleWrite(text); };
    protocol = std::make_unique<GuestProtocol>(memory, console);
    EXPECT_TRUE(protocol->Register(hypercalls).ok());
    serial = std::make_unique<Serial16550>(console);
    EXPECT_TRUE(bus.Register(AddressSpace::kMmio, 0x180003f8, 8, serial.get()).ok());
    EXPECT_TRUE(bus.Register(AddressSpace::kMmio, 0x1f000500, 4, &softres).ok());
    EXPECT_TRUE(bus.Register(AddressSpace::kMmio, 0x1f100000, 0x100, window.get()).ok());
    const char text[] = "hi\n";
    EXPECT_TRUE(memory.Write(kConsoleText, {reinterpret_cast<const uint8_t*>(text), 3}).ok());
    EXPECT_TRUE(memory.WriteObject(kConsoleArgs, sigvisor_hc_console_write{kConsoleText, 3}).ok());
  }
  void Put(uint64_t pa, const std::vector<uint32_t>& words) {
    for (uint32_t w : words) {
      EXPECT_TRUE(memory.WriteObject(pa, w).ok());
      pa += 4;
    }
  }

  GuestMemory memory;
  Bus bus;
  std::unique_ptr<MipsSystem> system;
  std::unique_ptr<MipsBackend> backend;
  std::unique_ptr<Session> session;
  std::unique_ptr<Serial16550> serial;
  MaltaSoftReset softres;
  HypercallTable hypercalls;
  std::unique_ptr<HypercallMmioWindow> window;
  std::unique_ptr<GuestProtocol> protocol;
};

// Exit with the status in register `reg` (the exit block's low word).
std::vector<uint32_t> ExitWith(uint32_t reg) {
  return {Lui(kT8, 0x8000),
          Sw(reg, static_cast<int32_t>(kExitArgs), kT8),
          Sw(kZero, static_cast<int32_t>(kExitArgs + 4), kT8),
          Lui(kT9, 0xbf10),
          Addiu(kT8, kZero, static_cast<int32_t>(kExitArgs)),
          Sw(kT8, 4 * SIGVISOR_HC_EXIT, kT9),
          Beq(0, 0, -1),
          Nop()};
}

std::vector<uint32_t> Concat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(MipsBackendTest, HypercallsThroughTheMmioWindow) {
  Rig rig(Concat({Lui(kT0, 0xbf10), Addiu(kT1, kZero, kConsoleArgs),
                  Sw(kT1, 4 * SIGVISOR_HC_CONSOLE_WRITE, kT0), Addiu(kS0, kZero, 7)},
                 ExitWith(kS0)));
  RunResult r = rig.session->Run();
  EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.console, "hi\n");
  EXPECT_EQ(r.kvm_stats.at("instructions"), 4u + 5u);  // the exit's store is not retired
  EXPECT_EQ(r.kvm_stats.at("mmio_exits"), 2u);
  EXPECT_EQ(r.kvm_stats.at("modelled_cycles"), 9u);
  EXPECT_EQ(r.ledger.Counts().size() > 0, true);
}

TEST(MipsBackendTest, UartAndSoftResetPowerOff) {
  Rig rig({Lui(kT0, 0xb800), Addiu(kT1, kZero, 'O'), Sb(kT1, 0x3f8, kT0), Addiu(kT1, kZero, 'K'),
           Sb(kT1, 0x3f8, kT0), Lui(kT0, 0xbf00), Addiu(kT1, kZero, 0x42), Sw(kT1, 0x500, kT0),
           Beq(0, 0, -1), Nop()});
  RunResult r = rig.session->Run();
  EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
  EXPECT_TRUE(rig.softres.powered_off());
  EXPECT_EQ(r.console, "OK");
}

TEST(MipsBackendTest, AccessToNothingIsTheGuestsBusError) {
  // The handler exits with Cause.ExcCode.
  Rig rig({Lui(kT0, 0xbfc0), Lw(kT1, 0, kT0), Beq(0, 0, -1), Nop()},
          Concat({Mfc0(kS0, kCp0Cause), Srl(kS0, kS0, 2), Andi(kS0, kS0, 31)}, ExitWith(kS0)));
  RunResult r = rig.session->Run();
  EXPECT_EQ(r.outcome, Outcome::kExited) << r.diagnosis;
  EXPECT_EQ(r.exit_code, static_cast<int>(ExcCode::kDataBusError));
  EXPECT_EQ(r.kvm_stats.at("bus_errors"), 1u);
  EXPECT_EQ(r.kvm_stats.at("exceptions"), 1u);
}

TEST(MipsBackendTest, WaitWithInterruptsOffHalts) {
  Rig rig({Wait(), Nop()});
  RunResult r = rig.session->Run();
  EXPECT_EQ(r.outcome, Outcome::kUnexpectedExit);
  EXPECT_NE(r.diagnosis.find("halted"), std::string::npos) << r.diagnosis;
}

TEST(MipsBackendTest, TheWatchdogStopsALoop) {
  Rig rig({Beq(0, 0, -1), Nop()}, {}, absl::Milliseconds(50));
  RunResult r = rig.session->Run();
  EXPECT_EQ(r.outcome, Outcome::kTimeout);
}

TEST(MipsBackendTest, LocateNamesTheModeAndRegisters) {
  std::vector<uint8_t> ram(1 << 16);
  auto system = *MipsSystem::Create(ram, 2, nullptr);
  system->core(0).Reset(0x80001234);
  MipsBackend backend(*system);
  absl::StatusOr<CpuLocation> where = backend.Locate();
  ASSERT_TRUE(where.ok());
  EXPECT_EQ(where->pc, 0x80001234u);
  EXPECT_EQ(where->cpl, 0);
  EXPECT_NE(where->registers.find("pc 80001234"), std::string::npos);
  absl::StatusOr<StatsSnapshot> stats = backend.ReadStats();
  ASSERT_TRUE(stats.ok());
  for (const char* name : {"instructions", "exceptions", "tlb_refills", "tlb_invalid",
                           "tlb_modified", "syscalls", "interrupts", "icache_lines_flushed",
                           "ipis_sent", "mmio_exits", "modelled_cycles", "core1.instructions",
                           "vdso_fetches", "vdso_writes", "core1.vdso_fetches"}) {
    EXPECT_EQ(stats->count(name), 1u) << name;
  }
}

}  // namespace
}  // namespace sigvisor::mips
