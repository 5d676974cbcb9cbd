// The guest protocol's decoding of every argument block, through the hypercall
// table: what the guest controls is bounded, checked and copied.
#include "vmm/run/guest_protocol.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "guest-kit/abi/sigvisor_abi.h"
#include "vmm/run/hypercall_table.h"

namespace sigvisor {
namespace {

class GuestProtocolTest : public ::testing::Test {
 protected:
  GuestProtocolTest()
      : memory_(*GuestMemory::Create(0x10000)),
        protocol_(memory_, [this](std::string_view text) { console_ += text; }) {
    EXPECT_TRUE(protocol_.Register(table_).ok());
  }

  HypercallResult Call(uint64_t nr, uint32_t args_gpa) {
    uint8_t bytes[4];
    std::memcpy(bytes, &args_gpa, 4);
    return table_.Call(nr, bytes);
  }

  GuestMemory memory_;
  std::string console_;
  GuestProtocol protocol_;
  HypercallTable table_;
};

TEST_F(GuestProtocolTest, ConsoleWrite) {
  ASSERT_TRUE(memory_.Write(0x2000, {reinterpret_cast<const uint8_t*>("hello"), 5}).ok());
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0x2000, 5}).ok());
  HypercallResult result = Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000);
  EXPECT_EQ(result.verdict, RunVerdict::kContinue);
  EXPECT_FALSE(result.instrument);
  EXPECT_EQ(console_, "hello");
}

TEST_F(GuestProtocolTest, ConsoleWriteOutsideRamIsRefused) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0xfff0, 0x100}).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).verdict, RunVerdict::kRunFailed);
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{~0ull, 2}).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).verdict, RunVerdict::kRunFailed);
  HypercallResult block = Call(SIGVISOR_HC_CONSOLE_WRITE, 0xfffffff0);  // the block itself
  EXPECT_EQ(block.verdict, RunVerdict::kRunFailed);
  EXPECT_EQ(block.outcome, Outcome::kBadDeviceAccess);
  EXPECT_NE(block.diagnosis.find("hypercall console_write: bad argument block at 0xfffffff0"),
            std::string::npos)
      << block.diagnosis;
  EXPECT_EQ(console_, "");
}

TEST_F(GuestProtocolTest, ConsoleWriteIsCapped) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_console_write{0x2000, 1ull << 40}).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_CONSOLE_WRITE, 0x1000).verdict, RunVerdict::kContinue);
  EXPECT_EQ(console_.size(), SIGVISOR_CONSOLE_MAX_WRITE);
}

TEST_F(GuestProtocolTest, PhaseMarkersWithUnterminatedName) {
  sigvisor_hc_phase_begin begin = {};
  std::memset(begin.name, 'x', sizeof(begin.name));  // no NUL: all 32 bytes are the name
  begin.ops = 7;
  begin.tsc = 11;
  begin.op_syscall_plus1 = 63;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  HypercallResult began = Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000);
  ASSERT_TRUE(began.marker.has_value());
  EXPECT_TRUE(began.marker->begin);
  EXPECT_EQ(began.marker->name, std::string(32, 'x'));
  EXPECT_EQ(began.marker->ops, 7u);
  EXPECT_EQ(began.marker->op_syscall, 62u);
  EXPECT_FALSE(began.marker->calibration);
  EXPECT_EQ(began.guest_tsc, 11u);
  ASSERT_TRUE(memory_.WriteObject(0x1100, sigvisor_hc_phase_end{19}).ok());
  HypercallResult ended = Call(SIGVISOR_HC_PHASE_END, 0x1100);
  ASSERT_TRUE(ended.marker.has_value());
  EXPECT_FALSE(ended.marker->begin);
  EXPECT_EQ(ended.guest_tsc, 19u);
}

// An SMP kernel's markers: the block, then every CPU's IPI counts, of which the
// machine's CPUs are kept; a uniprocessor kernel's markers carry none.
TEST_F(GuestProtocolTest, AnSmpKernelsMarkersCarryItsIpiCounts) {
  EXPECT_TRUE(Call(SIGVISOR_HC_PHASE_END, 0x1100).marker->guest_ipis.empty());
  protocol_.set_marker_ipi_cpus(2);
  sigvisor_hc_phase_begin_smp begin = {};
  std::memcpy(begin.phase.name, "xcpu", 5);
  begin.phase.tsc = 5;
  begin.ipis.sent[0] = 3;
  begin.ipis.received[1] = 4;
  begin.ipis.sent[2] = 99;  // past the machine's CPUs: not kept
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  HypercallResult began = Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000);
  ASSERT_TRUE(began.marker.has_value());
  EXPECT_EQ(began.marker->name, "xcpu");
  EXPECT_EQ(began.guest_tsc, 5u);
  EXPECT_EQ(began.marker->guest_ipis,
            (GuestIpiCounts{{.sent = 3, .received = 0}, {.sent = 0, .received = 4}}));
  sigvisor_hc_phase_end_smp end = {};
  end.phase.tsc = 6;
  end.ipis.sent[1] = 7;
  ASSERT_TRUE(memory_.WriteObject(0x1100, end).ok());
  HypercallResult ended = Call(SIGVISOR_HC_PHASE_END, 0x1100);
  ASSERT_TRUE(ended.marker.has_value());
  EXPECT_EQ(ended.guest_tsc, 6u);
  EXPECT_EQ(ended.marker->guest_ipis, (GuestIpiCounts{{}, {.sent = 7, .received = 0}}));
  // The longer block must fit in RAM too: one that only the short block would fit is
  // the guest's error, reported.
  const uint32_t edge = 0x10000 - sizeof(sigvisor_hc_phase_end);
  ASSERT_TRUE(memory_.WriteObject(edge, sigvisor_hc_phase_end{1}).ok());
  HypercallResult cut = Call(SIGVISOR_HC_PHASE_END, edge);
  EXPECT_EQ(cut.verdict, RunVerdict::kRunFailed);
  EXPECT_EQ(cut.outcome, Outcome::kBadDeviceAccess);
}

TEST_F(GuestProtocolTest, CalibrationFlagAndUnknownFlags) {
  sigvisor_hc_phase_begin begin = {};
  begin.flags = SIGVISOR_PHASE_CALIBRATION;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  HypercallResult calibration = Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000);
  ASSERT_TRUE(calibration.marker.has_value());
  EXPECT_TRUE(calibration.marker->calibration);
  EXPECT_FALSE(calibration.marker->op_syscall.has_value());
  begin.flags = 0x80;
  ASSERT_TRUE(memory_.WriteObject(0x1000, begin).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_PHASE_BEGIN, 0x1000).verdict, RunVerdict::kRunFailed);
}

TEST_F(GuestProtocolTest, ExitAndPanicEndTheRun) {
  ASSERT_TRUE(memory_.WriteObject(0x1000, sigvisor_hc_exit{0x103}).ok());
  HypercallResult exited = Call(SIGVISOR_HC_EXIT, 0x1000);
  EXPECT_EQ(exited.verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(exited.outcome, Outcome::kExited);
  EXPECT_EQ(exited.exit_code, 3);  // the low byte, as a process's status
  ASSERT_TRUE(memory_.Write(0x2000, {reinterpret_cast<const uint8_t*>("oops"), 4}).ok());
  sigvisor_hc_panic panic = {};
  panic.message_gpa = 0x2000;
  panic.message_len = 4;
  panic.rip = 0x100123;
  panic.vector = 14;
  ASSERT_TRUE(memory_.WriteObject(0x1000, panic).ok());
  HypercallResult panicked = Call(SIGVISOR_HC_PANIC, 0x1000);
  EXPECT_EQ(panicked.verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(panicked.outcome, Outcome::kPanicked);
  EXPECT_EQ(panicked.diagnosis, "guest kernel panic: oops (vector 14)");
  EXPECT_EQ(panicked.guest_pc, 0x100123u);
}

TEST_F(GuestProtocolTest, TimeReportIsAWarning) {
  sigvisor_hc_time_report report = {};
  std::strcpy(report.name, "lat");
  report.tsc_cycles = 500;
  report.count = 5;
  ASSERT_TRUE(memory_.WriteObject(0x1000, report).ok());
  EXPECT_EQ(Call(SIGVISOR_HC_TIME_REPORT, 0x1000).warning,
            "guest time report 'lat': 500 cycles over 5");
}

TEST_F(GuestProtocolTest, UnknownCallAndBadWidth) {
  EXPECT_EQ(Call(SIGVISOR_HC_COUNT, 0x1000).verdict, RunVerdict::kRunFailed);
  uint8_t one = 0;
  EXPECT_EQ(table_.Call(SIGVISOR_HC_EXIT, {&one, 1}).verdict, RunVerdict::kRunFailed);
}

// The quiescent point: the orders request at kOrdersArgs, its buffer at kOrdersBuf.
constexpr uint32_t kOrdersArgs = 0x1000;
constexpr uint64_t kOrdersBuf = 0x2000;

class OrdersTest : public GuestProtocolTest {
 protected:
  // A request as the kernel makes it (len = NONE), its buffer filled with 'x'.
  void Request(uint64_t buf_gpa, uint32_t buf_len) {
    ASSERT_TRUE(
        memory_.WriteObject(kOrdersArgs, sigvisor_hc_orders{buf_gpa, buf_len, SIGVISOR_ORDERS_NONE})
            .ok());
    ASSERT_TRUE(memory_.Fill(kOrdersBuf, 'x', 2 * SIGVISOR_CMDLINE_MAX).ok());
  }
  uint32_t Len() { return memory_.ReadObject<sigvisor_hc_orders>(kOrdersArgs)->len; }
  std::string Buffer(size_t n) {
    std::string bytes(n, '\0');
    EXPECT_TRUE(memory_.Read(kOrdersBuf, {reinterpret_cast<uint8_t*>(bytes.data()), n}).ok());
    return bytes;
  }
  // The request is refused as a bad device access naming `why`, nothing written.
  void ExpectRefused(const std::string& why) {
    HypercallResult refused = Call(SIGVISOR_HC_ORDERS, kOrdersArgs);
    EXPECT_EQ(refused.verdict, RunVerdict::kRunFailed);
    EXPECT_EQ(refused.outcome, Outcome::kBadDeviceAccess);
    EXPECT_EQ(refused.diagnosis.rfind("hypercall orders: ", 0), 0u) << refused.diagnosis;
    EXPECT_NE(refused.diagnosis.find(why), std::string::npos) << refused.diagnosis;
    EXPECT_EQ(Len(), SIGVISOR_ORDERS_NONE);
    EXPECT_EQ(Buffer(4), "xxxx");
  }
};

TEST_F(OrdersTest, WrittenNulTerminatedWithTheirLength) {
  EXPECT_EQ(HypercallName(SIGVISOR_HC_ORDERS), "orders");
  protocol_.set_orders("workload=divzero ops=10");
  Request(kOrdersBuf, SIGVISOR_CMDLINE_MAX);
  HypercallResult answered = Call(SIGVISOR_HC_ORDERS, kOrdersArgs);
  EXPECT_EQ(answered.verdict, RunVerdict::kContinue);
  EXPECT_FALSE(answered.instrument);  // the guest's own work
  EXPECT_EQ(Len(), 23u);
  EXPECT_EQ(Buffer(25), std::string("workload=divzero ops=10\0x", 25));  // no byte more
  EXPECT_EQ(memory_.ReadObject<sigvisor_hc_orders>(kOrdersArgs)->buf_len, SIGVISOR_CMDLINE_MAX);
}

TEST_F(OrdersTest, EmptyOrdersAreAnEmptyLine) {
  Request(kOrdersBuf, 1);
  EXPECT_EQ(Call(SIGVISOR_HC_ORDERS, kOrdersArgs).verdict, RunVerdict::kContinue);
  EXPECT_EQ(Len(), 0u);
  EXPECT_EQ(Buffer(2), std::string("\0x", 2));
}

TEST_F(OrdersTest, TheHookSeesTheRequestBeforeTheOrders) {
  protocol_.set_orders("workload=hello");
  Request(kOrdersBuf, SIGVISOR_CMDLINE_MAX);
  std::vector<uint32_t> seen;
  protocol_.set_quiescent_hook([&](uint32_t args_gpa) {
    seen.push_back(args_gpa);
    EXPECT_EQ(Len(), SIGVISOR_ORDERS_NONE);  // not yet answered
    EXPECT_EQ(Buffer(4), "xxxx");
    HypercallResult looked;
    looked.instrument = true;  // whatever the hook says, the call is the guest's
    return looked;
  });
  HypercallResult answered = Call(SIGVISOR_HC_ORDERS, kOrdersArgs);
  EXPECT_EQ(seen, std::vector<uint32_t>{kOrdersArgs});
  EXPECT_EQ(answered.verdict, RunVerdict::kContinue);
  EXPECT_FALSE(answered.instrument);
  EXPECT_EQ(Len(), 14u);
  EXPECT_EQ(Buffer(15), std::string("workload=hello\0", 15));
}

TEST_F(OrdersTest, AHookThatEndsTheRunLeavesTheOrdersUnwritten) {
  protocol_.set_orders("workload=hello");
  Request(kOrdersBuf, SIGVISOR_CMDLINE_MAX);
  protocol_.set_quiescent_hook([](uint32_t) {
    HypercallResult saved;
    saved.verdict = RunVerdict::kGuestEnded;
    saved.outcome = Outcome::kExited;
    saved.diagnosis = "saved";
    return saved;
  });
  HypercallResult ended = Call(SIGVISOR_HC_ORDERS, kOrdersArgs);
  EXPECT_EQ(ended.verdict, RunVerdict::kGuestEnded);
  EXPECT_EQ(ended.diagnosis, "saved");
  EXPECT_EQ(Len(), SIGVISOR_ORDERS_NONE);
  EXPECT_EQ(Buffer(4), "xxxx");
  // What a restored VM's board does before its first KVM_RUN: answer the same request.
  protocol_.set_orders("workload=divzero");
  ASSERT_TRUE(protocol_.AnswerOrders(kOrdersArgs).ok());
  EXPECT_EQ(Len(), 16u);
  EXPECT_EQ(Buffer(17), std::string("workload=divzero\0", 17));
}

TEST_F(OrdersTest, ABlockOutsideRamIsRefused) {
  Request(kOrdersBuf, SIGVISOR_CMDLINE_MAX);
  HypercallResult refused = Call(SIGVISOR_HC_ORDERS, 0xfffffff8);
  EXPECT_EQ(refused.outcome, Outcome::kBadDeviceAccess);
  EXPECT_EQ(refused.diagnosis.rfind("hypercall orders: bad argument block at 0xfffffff8", 0), 0u)
      << refused.diagnosis;
  EXPECT_EQ(Buffer(4), "xxxx");
}

TEST_F(OrdersTest, AnEmptyBufferIsRefused) {
  protocol_.set_orders("");
  Request(kOrdersBuf, 0);
  ExpectRefused("empty buffer (buf_len 0)");
}

TEST_F(OrdersTest, ABufferOutsideRamIsRefused) {
  protocol_.set_orders("ops=1");
  Request(0x10000 - 16, 32);  // straddles the end of RAM
  ExpectRefused("outside guest RAM");
  Request(~0ull - 4, 8);  // wraps
  ExpectRefused("outside guest RAM");
}

TEST_F(OrdersTest, OnlyTheAbisCommandLineOfALargerBufferIsUsed) {
  protocol_.set_orders("ops=1");
  // Larger than RAM's rest, but only the SIGVISOR_CMDLINE_MAX bytes the VMM uses are checked.
  Request(0x10000 - SIGVISOR_CMDLINE_MAX, 1u << 20);
  EXPECT_EQ(Call(SIGVISOR_HC_ORDERS, kOrdersArgs).verdict, RunVerdict::kContinue);
  EXPECT_EQ(Len(), 5u);
}

TEST_F(OrdersTest, OrdersThatDoNotFitAreRefusedNotTruncated) {
  const std::string orders = "workload=sigpingpong ops=1000 warmup=5";
  protocol_.set_orders(orders);
  Request(kOrdersBuf, orders.size() + 1);  // exactly: the orders and their NUL
  EXPECT_EQ(Call(SIGVISOR_HC_ORDERS, kOrdersArgs).verdict, RunVerdict::kContinue);
  EXPECT_EQ(Len(), orders.size());
  EXPECT_EQ(Buffer(orders.size() + 2), orders + std::string("\0x", 2));
  Request(kOrdersBuf, orders.size());  // one byte less
  ExpectRefused("the orders (38 bytes and a NUL) do not fit the guest's 38-byte buffer");
}

TEST_F(OrdersTest, OrdersLongerThanTheAbiCarriesAreRefused) {
  protocol_.set_orders(std::string(SIGVISOR_CMDLINE_MAX, 'o'));
  Request(kOrdersBuf, 2 * SIGVISOR_CMDLINE_MAX);
  ExpectRefused("the orders are 256 bytes; the ABI carries at most 255");
  protocol_.set_orders(std::string(SIGVISOR_CMDLINE_MAX - 1, 'o'));  // the most it carries
  EXPECT_EQ(Call(SIGVISOR_HC_ORDERS, kOrdersArgs).verdict, RunVerdict::kContinue);
  EXPECT_EQ(Len(), SIGVISOR_CMDLINE_MAX - 1);
  EXPECT_EQ(Buffer(SIGVISOR_CMDLINE_MAX + 1),
            std::string(SIGVISOR_CMDLINE_MAX - 1, 'o') + std::string("\0x", 2));
}

TEST(HypercallTableTest, OneOwnerPerNumberAndTheEventLeftToItsOwner) {
  HypercallTable table;
  bool injector_called = false;
  ASSERT_TRUE(table
                  .Register(SIGVISOR_HC_EVENT,
                            [&](uint32_t) {
                              injector_called = true;
                              HypercallResult mine;
                              mine.instrument = true;
                              return mine;
                            })
                  .ok());
  GuestMemory memory = *GuestMemory::Create(0x10000);
  GuestProtocol protocol(memory, [](std::string_view) {});
  ASSERT_TRUE(protocol.Register(table).ok());  // takes its own numbers, not the event
  uint32_t gpa = 0x1000;
  uint8_t bytes[4];
  std::memcpy(bytes, &gpa, 4);
  EXPECT_TRUE(table.Call(SIGVISOR_HC_EVENT, bytes).instrument);
  EXPECT_TRUE(injector_called);
  EXPECT_EQ(table.Register(SIGVISOR_HC_EXIT, [](uint32_t) { return HypercallResult{}; }).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(table.Register(HypercallTable::kMaxCalls, nullptr).ok());
}

}  // namespace
}  // namespace sigvisor
