// The run loop against a scripted backend: dispatch, ledger, phases, the watchdog
// and every failure outcome, without /dev/kvm.
#include "vmm/run/session.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/time/clock.h"
#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/machine/guest_memory.h"
#include "vmm/run/fake_backend.h"
#include "vmm/run/guest_protocol.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor {
namespace {

using Step = FakeBackend::Step;

constexpr uint64_t kArgsGpa = 0x1000;

// The machine's hypercall wiring as x86_machine does it: the table, the PC port
// block's gate (SIGVISOR_HC_PORTS ports at SIGVISOR_HC_PORT_BASE, NR = offset) and the guest
// protocol feeding the session's console.
struct Hypercalls {
  Hypercalls(GuestMemory& memory, Bus& bus, SessionOptions& options)
      : gate(table, 1) {
    options.hypercalls = &gate;
    EXPECT_TRUE(
        bus.Register(AddressSpace::kPort, SIGVISOR_HC_PORT_BASE, HypercallTable::kMaxCalls, &gate)
            .ok());
  }
  void Wire(GuestMemory& memory, Session& session) {
    protocol.emplace(memory, [&session](std::string_view text) { session.ConsoleWrite(text); });
    EXPECT_TRUE(protocol->Register(table).ok());
  }
  HypercallTable table;
  HypercallGate gate;
  std::optional<GuestProtocol> protocol;
};
constexpr uint64_t kOtherArgsGpa = 0x2000;

// A port that records writes.
struct CountingDevice : Device {
  int writes = 0;
  std::string_view name() const override { return "counter"; }
  absl::StatusOr<DeviceAction> Read(uint64_t, std::span<uint8_t> data) override {
    std::fill(data.begin(), data.end(), 0);
    return DeviceAction::kContinue;
  }
  absl::StatusOr<DeviceAction> Write(uint64_t, std::span<const uint8_t>) override {
    ++writes;
    return DeviceAction::kContinue;
  }
};

Step Hypercall(uint32_t nr, uint32_t args_gpa, StatsSnapshot stats = {}) {
  Step step;
  step.address = SIGVISOR_HC_PORT_BASE + nr;
  step.size = 4;
  step.bytes.resize(4);
  std::memcpy(step.bytes.data(), &args_gpa, 4);
  step.stats_after = std::move(stats);
  return step;
}

Step PortWrite(uint64_t port, StatsSnapshot stats = {}) {
  Step step;
  step.address = port;
  step.bytes = {0x41};
  step.stats_after = std::move(stats);
  return step;
}

class SessionTest : public ::testing::Test {
 protected:
  SessionTest() : memory_(*GuestMemory::Create(0x10000)) {}

  RunResult RunScript(std::vector<Step> steps, absl::Duration timeout = absl::Seconds(10),
                      ExitInterceptor* interceptor = nullptr,
                      std::function<void(SessionOptions&)> tweak = nullptr,
                      std::function<void(Bus&)> add_devices = nullptr) {
    FakeBackend backend(std::move(steps));
    Bus bus;
    SessionOptions options;
    options.timeout = timeout;
    options.interceptors = {interceptor};
    options.describe = [](const CpuLocation& where) { return "here"; };
    if (tweak) tweak(options);
    Hypercalls hypercalls(memory_, bus, options);
    Session session(backend, bus, options);
    hypercalls.Wire(memory_, session);
    EXPECT_TRUE(bus.Register(AddressSpace::kPort, 0x80, 1, &counter_).ok());
    if (add_devices) add_devices(bus);
    return session.Run();
  }

  void WriteExitArgs(int64_t status) {
    ASSERT_TRUE(memory_.WriteObject(kArgsGpa, sigvisor_hc_exit{status}).ok());
  }

  GuestMemory memory_;
  CountingDevice counter_;
};

TEST_F(SessionTest, GuestExitStatusAndExactExitCounts) {
  WriteExitArgs(7);
  RunResult result =
      RunScript({PortWrite(0x80), PortWrite(0x80), PortWrite(0x80), Hypercall(SIGVISOR_HC_EXIT, kArgsGpa)});
  EXPECT_EQ(result.outcome, Outcome::kExited);
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_EQ(counter_.writes, 3);
  EXPECT_EQ(result.ledger.total(), 4u);
  EXPECT_EQ(result.ledger.by_reason().at("io").count, 4u);
  EXPECT_EQ(result.ledger.by_detail().at({"io", "port 0x80 out (counter)"}).count, 3u);
}

TEST_F(SessionTest, PhaseExcludesItsMarkers) {
  sigvisor_hc_phase_begin begin = {};
  std::strcpy(begin.name, "work");
  begin.ops = 2;
  begin.tsc = 100;
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, begin).ok());
  ASSERT_TRUE(memory_.WriteObject(kOtherArgsGpa, sigvisor_hc_phase_end{700}).ok());
  ASSERT_TRUE(memory_.WriteObject(0x3000, sigvisor_hc_exit{0}).ok());
  // KVM's exit counter as a hardware host would count: every exit once.
  RunResult result = RunScript({
      Hypercall(SIGVISOR_HC_PHASE_BEGIN, kArgsGpa, {{"exits", 1}, {"io_exits", 1}}),
      PortWrite(0x80, {{"exits", 2}, {"io_exits", 2}}),
      PortWrite(0x80, {{"exits", 3}, {"io_exits", 3}}),
      Hypercall(SIGVISOR_HC_PHASE_END, kOtherArgsGpa, {{"exits", 4}, {"io_exits", 4}}),
      Hypercall(SIGVISOR_HC_EXIT, 0x3000, {{"exits", 5}, {"io_exits", 5}}),
  });
  ASSERT_EQ(result.phases.size(), 1u);
  const PhaseResult& phase = result.phases[0];
  EXPECT_EQ(phase.name, "work");
  EXPECT_EQ(phase.ops, 2u);
  EXPECT_EQ(phase.exits_total, 2u);
  EXPECT_EQ(phase.kvm_stats.at("exits"), 2u);
  EXPECT_EQ(phase.tsc_cycles, 600u);
}

TEST_F(SessionTest, WatchdogStopsAHungGuest) {
  RunResult result = RunScript({PortWrite(0x80)}, absl::Milliseconds(50));
  EXPECT_EQ(result.outcome, Outcome::kTimeout);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.diagnosis.find("timeout"), std::string::npos);
  EXPECT_EQ(counter_.writes, 1);  // what ran before the hang is still accounted
  EXPECT_EQ(result.ledger.total(), 2u);
}

TEST_F(SessionTest, AHungGuestKeepsThePhasesItEndedAndIsMarkedIncomplete) {
  sigvisor_hc_phase_begin begin = {};
  std::strcpy(begin.name, "work");
  begin.ops = 1;
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, begin).ok());
  ASSERT_TRUE(memory_.WriteObject(kOtherArgsGpa, sigvisor_hc_phase_end{9}).ok());
  std::strcpy(begin.name, "never_ends");
  ASSERT_TRUE(memory_.WriteObject(0x3000, begin).ok());
  RunResult result = RunScript({Hypercall(SIGVISOR_HC_PHASE_BEGIN, kArgsGpa), PortWrite(0x80),
                                Hypercall(SIGVISOR_HC_PHASE_END, kOtherArgsGpa),
                                Hypercall(SIGVISOR_HC_PHASE_BEGIN, 0x3000)},
                               absl::Milliseconds(50));
  EXPECT_EQ(result.outcome, Outcome::kTimeout);
  EXPECT_FALSE(result.complete());
  ASSERT_EQ(result.phases.size(), 1u);
  EXPECT_EQ(result.phases[0].name, "work");
  EXPECT_EQ(result.phases[0].exits_total, 1u);
}

TEST_F(SessionTest, AnInterruptEndsTheRunAsInterruptedWithThePhasesItEnded) {
  sigvisor_hc_phase_begin begin = {};
  std::strcpy(begin.name, "work");
  begin.ops = 1;
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, begin).ok());
  ASSERT_TRUE(memory_.WriteObject(kOtherArgsGpa, sigvisor_hc_phase_end{9}).ok());
  std::atomic<bool> interrupt{false};
  // Set while the guest "runs" (the backend blocks after the script), as a SIGINT
  // handler would; no timeout would ever end this run.
  std::thread interrupter([&interrupt] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    interrupt.store(true);
  });
  RunResult result = RunScript(
      {Hypercall(SIGVISOR_HC_PHASE_BEGIN, kArgsGpa), PortWrite(0x80),
       Hypercall(SIGVISOR_HC_PHASE_END, kOtherArgsGpa)},
      absl::InfiniteDuration(), nullptr,
      [&interrupt](SessionOptions& options) { options.interrupt = &interrupt; });
  interrupter.join();
  EXPECT_EQ(result.outcome, Outcome::kInterrupted);
  EXPECT_EQ(OutcomeName(result.outcome), "interrupted");
  EXPECT_FALSE(result.complete());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.diagnosis.find("SIGINT"), std::string::npos) << result.diagnosis;
  ASSERT_EQ(result.phases.size(), 1u);
  EXPECT_EQ(result.phases[0].name, "work");
  EXPECT_EQ(counter_.writes, 1);
  EXPECT_EQ(result.ledger.by_detail().count({"interrupted", "interrupt"}), 1u);
}

TEST_F(SessionTest, AnInterruptSetBeforeTheRunEndsItAtOnce) {
  std::atomic<bool> interrupt{true};
  RunResult result =
      RunScript({PortWrite(0x80)}, absl::Seconds(30), nullptr,
                [&interrupt](SessionOptions& options) { options.interrupt = &interrupt; });
  EXPECT_EQ(result.outcome, Outcome::kInterrupted);
}

TEST_F(SessionTest, ConsoleOutputPastMaxOutputIsDroppedAndReported) {
  std::string text(100, 'x');
  ASSERT_TRUE(memory_.Write(0x4000, std::span<const uint8_t>(
                                        reinterpret_cast<const uint8_t*>(text.data()), text.size()))
                  .ok());
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, sigvisor_hc_console_write{0x4000, 100}).ok());
  WriteExitArgs(0);
  ASSERT_TRUE(memory_.WriteObject(kOtherArgsGpa, sigvisor_hc_exit{0}).ok());
  std::string streamed;
  std::vector<Step> steps(5, Hypercall(SIGVISOR_HC_CONSOLE_WRITE, kArgsGpa));
  steps.push_back(Hypercall(SIGVISOR_HC_EXIT, kOtherArgsGpa));
  RunResult result = RunScript(std::move(steps), absl::Seconds(10), nullptr,
                               [&](SessionOptions& options) {
                                 options.max_output_bytes = 250;
                                 options.console_sink = [&](std::string_view t) {
                                   streamed.append(t);
                                 };
                               });
  EXPECT_EQ(result.outcome, Outcome::kExited);
  EXPECT_EQ(streamed.size(), 250u);
  EXPECT_EQ(result.console_bytes, 500u);
  EXPECT_EQ(result.console_dropped_bytes, 250u);
  EXPECT_LE(result.console.size(), 250u);
  ASSERT_FALSE(result.warnings.empty());
  EXPECT_NE(result.warnings[0].find("--max-output"), std::string::npos);
}

TEST_F(SessionTest, GuestTriggeredWarningsAreCapped) {
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, sigvisor_hc_time_report{}).ok());
  ASSERT_TRUE(memory_.WriteObject(kOtherArgsGpa, sigvisor_hc_exit{0}).ok());
  std::vector<Step> steps(1000, Hypercall(SIGVISOR_HC_TIME_REPORT, kArgsGpa));
  steps.push_back(Hypercall(SIGVISOR_HC_EXIT, kOtherArgsGpa));
  RunResult result = RunScript(std::move(steps));
  EXPECT_EQ(result.outcome, Outcome::kExited);
  EXPECT_EQ(result.warnings.size() + result.warnings_dropped, 1000u);
  EXPECT_LE(result.warnings.size(), 64u);
}

// The run loop under the seccomp sandbox: a forbidden syscall (openat) from the
// run-loop thread fails with EPERM, and the run itself completes and is measured.
TEST_F(SessionTest, SandboxRefusesAForbiddenSyscallOnTheRunLoopThread) {
  WriteExitArgs(3);
  int open_result = 0, open_errno = 0;
  RunResult result = RunScript({PortWrite(0x80), Hypercall(SIGVISOR_HC_EXIT, kArgsGpa)},
                               absl::Seconds(10), nullptr, [&](SessionOptions& options) {
                                 options.sandbox = SandboxPolicy{};
                                 options.sandboxed_hook = [&] {
                                   open_result = open("/proc/self/status", O_RDONLY);
                                   open_errno = errno;
                                 };
                               });
  EXPECT_EQ(open_result, -1);
  EXPECT_EQ(open_errno, EPERM);
  EXPECT_EQ(result.outcome, Outcome::kExited);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.ledger.total(), 2u);
  EXPECT_NE(result.sandbox.find("seccomp"), std::string::npos);
  // The calling thread is not confined.
  int fd = open("/proc/self/status", O_RDONLY);
  EXPECT_GE(fd, 0);
  if (fd >= 0) close(fd);
}

// An interceptor's OnStart runs inside the sandbox, so a thread it starts there (the
// gdb stub's interrupt watcher) is confined too.
struct ThreadStarter : ExitInterceptor {
  int open_result = 0, open_errno = 0;
  absl::Status OnStart() override {
    std::thread watcher([this] {
      open_result = open("/proc/self/status", O_RDONLY);
      open_errno = errno;
    });
    watcher.join();
    return absl::OkStatus();
  }
  Interception Intercept(const VmExit&) override { return {}; }
};

TEST_F(SessionTest, ThreadsStartedByInterceptorsAreSandboxedToo) {
  WriteExitArgs(0);
  ThreadStarter starter;
  RunResult result = RunScript({Hypercall(SIGVISOR_HC_EXIT, kArgsGpa)}, absl::Seconds(10),
                               &starter,
                               [](SessionOptions& options) { options.sandbox = SandboxPolicy{}; });
  EXPECT_EQ(result.outcome, Outcome::kExited);
  EXPECT_EQ(starter.open_result, -1);
  EXPECT_EQ(starter.open_errno, EPERM);
}

TEST_F(SessionTest, WithoutASandboxTheReportSaysOff) {
  WriteExitArgs(0);
  RunResult result = RunScript({Hypercall(SIGVISOR_HC_EXIT, kArgsGpa)});
  EXPECT_EQ(result.sandbox, "off");
  EXPECT_TRUE(result.complete());
}

// What a Linux machine's bus answers where nothing is (devices/pc's Unclaimed).
struct AllOnes : Device {
  std::string_view name() const override { return "unclaimed"; }
  absl::StatusOr<DeviceAction> Read(uint64_t, std::span<uint8_t> data) override {
    std::fill(data.begin(), data.end(), 0xff);
    return DeviceAction::kContinue;
  }
  absl::StatusOr<DeviceAction> Write(uint64_t, std::span<const uint8_t>) override {
    return DeviceAction::kContinue;
  }
};

TEST_F(SessionTest, UnclaimedPortsAreCountedOnePortARow) {
  AllOnes unclaimed;
  Step read_61;
  read_61.address = 0x61;
  read_61.is_write = false;
  read_61.bytes = {0};
  WriteExitArgs(0);
  RunResult result = RunScript(
      {PortWrite(0x1234), read_61, PortWrite(0x1234), PortWrite(0x80), PortWrite(0x1235),
       Hypercall(SIGVISOR_HC_EXIT, kArgsGpa)},
      absl::Seconds(10), nullptr, nullptr,
      [&](Bus& bus) { bus.SetUnclaimed(AddressSpace::kPort, &unclaimed); });
  EXPECT_EQ(result.outcome, Outcome::kExited) << result.diagnosis;
  EXPECT_EQ(counter_.writes, 1);  // a registered port is still its device's
  const auto details = result.ledger.by_detail();
  EXPECT_EQ(details.at({"io", "port 0x1234 out (unclaimed)"}).count, 2u);
  EXPECT_EQ(details.at({"io", "port 0x1235 out (unclaimed)"}).count, 1u);
  EXPECT_EQ(details.at({"io", "port 0x61 in (unclaimed)"}).count, 1u);
  EXPECT_EQ(result.ledger.by_reason().at("io").count, 6u);
}

TEST_F(SessionTest, UnknownPortIsABadDeviceAccess) {
  RunResult result = RunScript({PortWrite(0x1234)});
  EXPECT_EQ(result.outcome, Outcome::kBadDeviceAccess);
  EXPECT_NE(result.diagnosis.find("0x1234"), std::string::npos);
  EXPECT_NE(result.diagnosis.find("here"), std::string::npos);
}

// A device that pulses the reset line on any write, as the i8042 does on 0xfe.
struct ResetLine : Device {
  std::string_view name() const override { return "reset-line"; }
  std::string AccessName(uint64_t) const override { return "reset-line command"; }
  absl::StatusOr<DeviceAction> Read(uint64_t, std::span<uint8_t> data) override {
    std::fill(data.begin(), data.end(), 0);
    return DeviceAction::kContinue;
  }
  absl::StatusOr<DeviceAction> Write(uint64_t, std::span<const uint8_t>) override {
    return DeviceAction::kReset;
  }
};

TEST_F(SessionTest, AResetEndsTheRunAsARebootAndTheExitIsCounted) {
  ResetLine reset;
  Step pulse = PortWrite(0x64);
  pulse.bytes = {0xfe};
  RunResult result = RunScript({PortWrite(0x80), pulse, PortWrite(0x80)}, absl::Seconds(10),
                               nullptr, nullptr, [&](Bus& bus) {
                                 ASSERT_TRUE(
                                     bus.Register(AddressSpace::kPort, 0x64, 1, &reset).ok());
                               });
  EXPECT_EQ(result.outcome, Outcome::kReboot);
  EXPECT_EQ(OutcomeName(result.outcome), "reboot");
  EXPECT_FALSE(result.complete());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(result.diagnosis,
            "the guest reset the machine: port 0x64 out (reset-line command) at here");
  EXPECT_EQ(counter_.writes, 1);  // the run ended at the reset
  EXPECT_EQ(result.ledger.total(), 2u);
  EXPECT_EQ(result.ledger.by_detail().at({"io", "port 0x64 out (reset-line command)"}).count, 1u);
}

TEST_F(SessionTest, TripleFaultAndInternalError) {
  Step shutdown;
  shutdown.kind = ExitKind::kShutdown;
  EXPECT_EQ(RunScript({shutdown}).outcome, Outcome::kTripleFault);
  Step internal;
  internal.kind = ExitKind::kInternalError;
  internal.raw_detail = 1;
  RunResult result = RunScript({internal});
  EXPECT_EQ(result.outcome, Outcome::kEmulationFailure);
  EXPECT_NE(result.diagnosis.find("suberror 1"), std::string::npos);
}

TEST_F(SessionTest, MalformedHypercallIsReported) {
  RunResult result = RunScript({Hypercall(SIGVISOR_HC_CONSOLE_WRITE, 0xfffffff0)});
  EXPECT_EQ(result.outcome, Outcome::kBadDeviceAccess);
  EXPECT_NE(result.diagnosis.find("console_write"), std::string::npos);
}

// The bundled kernel's first hypercall is its orders call, at its quiescent point: boot
// ends there, though no output, marker or exit follows.
TEST_F(SessionTest, TheOrdersCallEndsBoot) {
  ASSERT_TRUE(
      memory_.WriteObject(kArgsGpa, sigvisor_hc_orders{0x4000, 64, SIGVISOR_ORDERS_NONE}).ok());
  Step shutdown;
  shutdown.kind = ExitKind::kShutdown;
  RunResult result = RunScript(
      {PortWrite(0x80), Hypercall(SIGVISOR_HC_ORDERS, kArgsGpa), PortWrite(0x80), shutdown});
  EXPECT_EQ(result.outcome, Outcome::kTripleFault) << result.diagnosis;
  EXPECT_NE(result.first_hypercall_ns, 0u);
  EXPECT_EQ(memory_.ReadObject<sigvisor_hc_orders>(kArgsGpa)->len, 0u);  // no orders set: ""
  EXPECT_EQ(result.ledger.by_detail().at({"io", "port 0x509 out (hypercall orders)"}).count, 1u);
}

TEST_F(SessionTest, PanicIsReported) {
  const char message[] = "oops";
  ASSERT_TRUE(memory_.Write(0x3000, {reinterpret_cast<const uint8_t*>(message), 4}).ok());
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, sigvisor_hc_panic{0x3000, 4, 0x100010, 14}).ok());
  RunResult result = RunScript({Hypercall(SIGVISOR_HC_PANIC, kArgsGpa)});
  EXPECT_EQ(result.outcome, Outcome::kPanicked) << result.diagnosis;
  EXPECT_NE(result.diagnosis.find("oops"), std::string::npos);
  EXPECT_NE(result.diagnosis.find("vector 14"), std::string::npos);
}

TEST_F(SessionTest, StringIoIsOneAccessPerElement) {
  Step rep;
  rep.address = 0x80;
  rep.count = 5;
  rep.bytes = {1, 2, 3, 4, 5};
  WriteExitArgs(0);
  RunResult result = RunScript({rep, Hypercall(SIGVISOR_HC_EXIT, kArgsGpa)});
  EXPECT_EQ(counter_.writes, 5);
  EXPECT_EQ(result.ledger.total(), 2u);  // one exit
}

// A trap mechanism that takes hlt exits: even raw_detail values are DR7 writes that
// cost a hardware load when raw_detail is 2, odd ones are not its sites.
struct HaltTraps : ExitInterceptor {
  int seen = 0;
  Interception Intercept(const VmExit& exit) override {
    ++seen;
    Interception result;
    if (exit.kind != ExitKind::kHalt) return result;
    if (exit.raw_detail % 2) {
      return Interception::RunFailed(Outcome::kUnexpectedExit,
                                     "hlt at 0x100041 is not a trap site");
    }
    result.verdict = RunVerdict::kContinue;
    result.detail = "trap dr_write";
    result.trap = TrapRecord{"dr_write", 0x100040, "signal+0x10"};
    result.dr_loads = exit.raw_detail == 2 ? 1 : 0;
    return result;
  }
};

Step Halt(uint64_t raw_detail = 0) {
  Step step;
  step.kind = ExitKind::kHalt;
  step.raw_detail = raw_detail;
  return step;
}

TEST_F(SessionTest, InterceptedTrapsAreCountedInTheLedgersAndThePhase) {
  sigvisor_hc_phase_begin begin = {};
  std::strcpy(begin.name, "sig");
  begin.ops = 3;
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, begin).ok());
  ASSERT_TRUE(memory_.WriteObject(kOtherArgsGpa, sigvisor_hc_phase_end{0}).ok());
  ASSERT_TRUE(memory_.WriteObject(0x3000, sigvisor_hc_exit{0}).ok());
  HaltTraps traps;
  RunResult result = RunScript({Halt(), Hypercall(SIGVISOR_HC_PHASE_BEGIN, kArgsGpa), Halt(2),
                                Halt(), Halt(), Hypercall(SIGVISOR_HC_PHASE_END, kOtherArgsGpa),
                                Hypercall(SIGVISOR_HC_EXIT, 0x3000)},
                               absl::Seconds(10), &traps);
  EXPECT_EQ(result.outcome, Outcome::kExited) << result.diagnosis;
  EXPECT_EQ(traps.seen, 7);  // offered every exit, took the halts only
  EXPECT_EQ(result.traps.total(), 4u);
  EXPECT_EQ(result.traps.dr_loads(), 1u);
  EXPECT_EQ(result.ledger.by_detail().at({"hlt", "trap dr_write"}).count, 4u);
  EXPECT_EQ(counter_.writes, 0);
  ASSERT_EQ(result.phases.size(), 1u);
  EXPECT_EQ(result.phases[0].traps.by_kind, (TrapCounts{{"dr_write", 3}}));
  EXPECT_EQ(result.phases[0].traps.dr_loads, 1u);
  EXPECT_EQ(result.phases[0].exits, (ExitCounts{{"hlt", 3}}));
}

TEST_F(SessionTest, AnInterceptorCanEndTheRun) {
  HaltTraps traps;
  RunResult result = RunScript({Halt(1)}, absl::Seconds(10), &traps);
  EXPECT_EQ(result.outcome, Outcome::kUnexpectedExit);
  EXPECT_NE(result.diagnosis.find("not a trap site"), std::string::npos);
  EXPECT_NE(result.diagnosis.find("here"), std::string::npos);  // where the guest is
  // Without an interceptor a hlt is still the old clear failure.
  RunResult plain = RunScript({Halt()});
  EXPECT_EQ(plain.outcome, Outcome::kUnexpectedExit);
  EXPECT_NE(plain.diagnosis.find("halted"), std::string::npos);
}

// An instrument (a tracer, a debugger): takes the debug exits it caused as its own,
// records what it observes, the phase markers and the end.
struct Instrument : ExitInterceptor {
  absl::Status start = absl::OkStatus();
  absl::Duration start_takes = absl::ZeroDuration();  // a debugger waiting for its client
  bool kill_on_debug = false;
  std::vector<std::string> log;
  absl::Status OnStart() override {
    log.push_back("start");
    absl::SleepFor(start_takes);
    return start;
  }
  Interception Intercept(const VmExit& exit) override {
    Interception result;
    if (exit.kind != ExitKind::kDebug) return result;
    result.verdict = kill_on_debug ? RunVerdict::kRunFailed : RunVerdict::kContinue;
    result.outcome = Outcome::kKilled;  // when it fails the run
    result.detail = "single step";
    result.diagnosis = "killed by the test";
    result.instrument = true;
    return result;
  }
  void Observe(const ObservedExit& observed) override {
    log.push_back(std::string(ExitKindName(observed.exit.kind)) +
                  (observed.instrument ? " (instrument)" : "") +
                  (observed.trap != nullptr ? " trap " + std::string(observed.trap->kind) : ""));
  }
  void OnPhaseMarker(const PhaseMarker& marker) override {
    log.push_back(marker.begin ? "begin " + marker.name + (marker.calibration ? " (cal)" : "")
                               : "end");
  }
  void OnEnd(const RunEnd& end) override { log.push_back("end of run: " + std::string(OutcomeName(end.outcome))); }
};

class MultiInterceptorTest : public SessionTest {
 protected:
  RunResult RunWith(std::vector<Step> steps, std::vector<ExitInterceptor*> interceptors) {
    FakeBackend backend(std::move(steps));
    Bus bus;
    SessionOptions options;
    options.interceptors = std::move(interceptors);
    Hypercalls hypercalls(memory_, bus, options);
    Session session(backend, bus, options);
    hypercalls.Wire(memory_, session);
    return session.Run();
  }
};

Step Debug() {
  Step step;
  step.kind = ExitKind::kDebug;
  step.raw_detail = 0x4000;  // DR6.BS
  return step;
}

TEST_F(MultiInterceptorTest, EachTakesItsOwnAndAllObserveInOrder) {
  sigvisor_hc_phase_begin begin = {};
  std::strcpy(begin.name, "sig");
  begin.ops = 1;
  ASSERT_TRUE(memory_.WriteObject(kArgsGpa, begin).ok());
  ASSERT_TRUE(memory_.WriteObject(kOtherArgsGpa, sigvisor_hc_phase_end{0}).ok());
  ASSERT_TRUE(memory_.WriteObject(0x3000, sigvisor_hc_exit{0}).ok());
  HaltTraps traps;
  Instrument tracer;
  RunResult result =
      RunWith({Hypercall(SIGVISOR_HC_PHASE_BEGIN, kArgsGpa), Debug(), Halt(), Debug(),
               Hypercall(SIGVISOR_HC_PHASE_END, kOtherArgsGpa), Hypercall(SIGVISOR_HC_EXIT, 0x3000)},
              {&traps, nullptr, &tracer});
  EXPECT_EQ(result.outcome, Outcome::kExited) << result.diagnosis;
  EXPECT_EQ(traps.seen, 6);
  EXPECT_EQ(tracer.log, (std::vector<std::string>{
                            "start", "io", "begin sig", "debug (instrument)", "hlt trap dr_write",
                            "debug (instrument)", "io", "end", "io", "end of run: exited"}));
  // The instrument's own exits are kept out of the ledger and the phase.
  EXPECT_EQ(result.ledger.total(), 4u);
  ASSERT_EQ(result.phases.size(), 1u);
  EXPECT_EQ(result.phases[0].exits, (ExitCounts{{"hlt", 1}}));
}

TEST_F(MultiInterceptorTest, AKillEndsTheRunAsKilled) {
  Instrument debugger;
  debugger.kill_on_debug = true;
  RunResult result = RunWith({Debug(), Debug()}, {&debugger});
  EXPECT_EQ(result.outcome, Outcome::kKilled);
  EXPECT_EQ(OutcomeName(result.outcome), "killed");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.diagnosis, "killed by the test");
  EXPECT_EQ(debugger.log.back(), "end of run: killed");
}

TEST_F(MultiInterceptorTest, OnStartCanRefuseTheRun) {
  Instrument debugger;
  debugger.start = absl::CancelledError("killed before the first instruction");
  RunResult killed = RunWith({Debug()}, {&debugger});
  EXPECT_EQ(killed.outcome, Outcome::kKilled);
  Instrument broken;
  broken.start = absl::UnavailableError("accept failed");
  RunResult failed = RunWith({Debug()}, {&broken});
  EXPECT_EQ(failed.outcome, Outcome::kHostError);
  EXPECT_EQ(failed.diagnosis, "accept failed");
  EXPECT_EQ(failed.ledger.total(), 0u);
}

// Issue 30: `run --gdb PORT --timeout 2s` with no gdb waited forever. The stub's wait
// ends at the timeout (DeadlineExceeded) or at Ctrl-C (Aborted); the run ends as a
// timeout or as interrupted, with the stub's words and no guest location (it never ran).
TEST_F(SessionTest, AWaitInOnStartEndsAsATimeoutOrAsInterrupted) {
  Instrument waited_out;
  waited_out.start = absl::DeadlineExceededError("no debugger attached within the 2s timeout");
  RunResult timeout = RunScript({PortWrite(0x80)}, absl::Seconds(2), &waited_out);
  EXPECT_EQ(timeout.outcome, Outcome::kTimeout);
  EXPECT_FALSE(timeout.complete());
  EXPECT_EQ(timeout.diagnosis, "no debugger attached within the 2s timeout");
  EXPECT_EQ(timeout.ledger.total(), 0u);
  EXPECT_EQ(counter_.writes, 0);  // the guest never ran
  EXPECT_EQ(waited_out.log.back(), "end of run: timeout");
  Instrument interrupted;
  interrupted.start = absl::AbortedError("SIGINT or SIGTERM stopped the run while it waited");
  RunResult stopped = RunScript({PortWrite(0x80)}, absl::Seconds(2), &interrupted);
  EXPECT_EQ(stopped.outcome, Outcome::kInterrupted);
  EXPECT_EQ(stopped.diagnosis, "SIGINT or SIGTERM stopped the run while it waited");
  EXPECT_EQ(counter_.writes, 0);
}

// --timeout covers the interceptors' start: a guest that hangs after a slow start is
// stopped at the timeout counted from the start, not from its first instruction.
TEST_F(SessionTest, TheTimeoutCoversTheInterceptorsStart) {
  Instrument slow;
  slow.start_takes = absl::Milliseconds(1000);
  const absl::Time begin = absl::Now();
  RunResult result = RunScript({PortWrite(0x80)}, absl::Milliseconds(1200), &slow);
  const absl::Duration took = absl::Now() - begin;
  EXPECT_EQ(result.outcome, Outcome::kTimeout);
  EXPECT_EQ(counter_.writes, 1);
  // 1.2 s in all; 2.2 s when the timeout began at the first instruction.
  EXPECT_GE(took, absl::Milliseconds(1200));
  EXPECT_LT(took, absl::Milliseconds(1900)) << took;
}

}  // namespace
}  // namespace sigvisor
