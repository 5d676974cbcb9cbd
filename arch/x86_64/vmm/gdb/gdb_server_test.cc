// The gdb stub's protocol side over a socketpair against a fake target: framing and
// acks, registers, memory, breakpoints, the target description, resume actions.
#include "vmm/gdb/gdb_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "arch/x86_64/vmm/gdb/x86_64_target.h"
#include "vmm/gdb/rsp.h"

namespace sigvisor::gdb {
namespace {

struct FakeTarget : GdbTarget {
  X86Registers regs;
  std::map<uint64_t, uint8_t> memory;
  std::vector<std::string> breakpoints;  // "Z1,ADDR" / "z1,ADDR"
  std::string TargetXml() override { return X86TargetXml(); }
  absl::StatusOr<std::vector<uint8_t>> ReadRegisters() override { return PackX86Registers(regs); }
  absl::Status WriteRegisters(std::span<const uint8_t> raw) override {
    return UnpackX86Registers(raw, regs) ? absl::OkStatus() : absl::InvalidArgumentError("size");
  }
  absl::StatusOr<std::vector<uint8_t>> ReadRegister(int n) override {
    auto raw = PackX86Register(regs, n);
    if (!raw) return absl::InvalidArgumentError("no such register");
    return *raw;
  }
  absl::Status WriteRegister(int n, std::span<const uint8_t> raw) override {
    return UnpackX86Register(n, raw, regs) ? absl::OkStatus() : absl::InvalidArgumentError("size");
  }
  absl::StatusOr<std::vector<uint8_t>> ReadMemory(uint64_t address, size_t length) override {
    std::vector<uint8_t> out;
    for (size_t i = 0; i < length && memory.count(address + i); ++i) out.push_back(memory[address + i]);
    if (out.empty()) return absl::NotFoundError("unmapped");
    return out;
  }
  absl::Status WriteMemory(uint64_t address, std::span<const uint8_t> data) override {
    for (size_t i = 0; i < data.size(); ++i) memory[address + i] = data[i];
    return absl::OkStatus();
  }
  absl::Status InsertBreakpoint(BreakType type, uint64_t address, int kind) override {
    if (type == BreakType::kWrite) return absl::FailedPreconditionError("no watchpoints here");
    if (type == BreakType::kRead) return absl::UnimplementedError("no read watchpoints");
    breakpoints.push_back("Z" + std::to_string(static_cast<int>(type)) + "," + std::to_string(address));
    return absl::OkStatus();
  }
  absl::Status RemoveBreakpoint(BreakType type, uint64_t address, int kind) override {
    breakpoints.push_back("z" + std::to_string(static_cast<int>(type)) + "," + std::to_string(address));
    return absl::OkStatus();
  }
  absl::Status SetPc(uint64_t pc) override {
    regs.rip = pc;
    return absl::OkStatus();
  }
};

// A raw client on the other end of a socketpair, with the server on a thread.
class GdbServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    client_ = fds[0];
    server_ = std::make_unique<GdbServer>(std::make_unique<RspConnection>(fds[1]), target_);
    target_.regs.rip = 0x100020;
    target_.regs.gpr[0] = 0x1122334455667788;
    for (uint64_t a = 0x1000; a < 0x1010; ++a) target_.memory[a] = static_cast<uint8_t>(a);
  }
  void TearDown() override {
    if (thread_.joinable()) thread_.join();
    close(client_);
  }
  // Starts serving (stopped, reply `stop`) on a thread.
  void Serve(std::string stop = "") {
    thread_ = std::thread([this, stop] { action_ = server_->Serve(stop); });
  }
  void Send(const std::string& data) {
    const std::string framed = Frame(data);
    ASSERT_EQ(write(client_, framed.data(), framed.size()), static_cast<ssize_t>(framed.size()));
  }
  // The next packet's data (acks are skipped; we ack it).
  std::string Receive() {
    std::string data;
    char c;
    while (read(client_, &c, 1) == 1 && c != '$') {
    }
    while (read(client_, &c, 1) == 1 && c != '#') data.push_back(c);
    char sum[2];
    EXPECT_EQ(read(client_, sum, 2), 2);
    EXPECT_EQ(write(client_, "+", 1), 1);
    return data;
  }
  std::string Ask(const std::string& packet) {
    Send(packet);
    return Receive();
  }
  GdbServer::Action Resumed() {
    thread_.join();
    EXPECT_TRUE(action_.ok()) << action_.status();
    return action_.ok() ? *action_ : GdbServer::Action::kKill;
  }

  FakeTarget target_;
  std::unique_ptr<GdbServer> server_;
  int client_ = -1;
  std::thread thread_;
  absl::StatusOr<GdbServer::Action> action_ = absl::UnknownError("not served");
};

TEST(RspTest, HexAndEscapes) {
  EXPECT_EQ(HexEncode(std::vector<uint8_t>{0x00, 0xab, 0x7f}), "00ab7f");
  EXPECT_EQ(*HexDecode("00ab7f"), (std::vector<uint8_t>{0x00, 0xab, 0x7f}));
  EXPECT_FALSE(HexDecode("0g").has_value());
  EXPECT_FALSE(HexDecode("abc").has_value());
  EXPECT_EQ(*ParseHex("1f"), 31u);
  EXPECT_EQ(HexLittleEndian(0x1234, 4), "34120000");
  const std::vector<uint8_t> special = {'$', '#', '}', '*', 'a'};
  EXPECT_EQ(UnescapeBinary(EscapeBinary(special)), special);
  EXPECT_EQ(Frame("OK"), "$OK#9a");
}

TEST(X86TargetTest, RegisterLayoutRoundTrips) {
  X86Registers regs;
  for (int i = 0; i < 16; ++i) regs.gpr[i] = 0x1000 + i;
  regs.rip = 0xabc;
  regs.rflags = 0x246;
  regs.cr3 = 0x5000;
  const std::vector<uint8_t> raw = PackX86Registers(regs);
  EXPECT_EQ(raw.size(), 16u * 8 + 8 + 4 + 6 * 4 + 8 * 10 + 8 * 4 + 2 * 8 + 5 * 8);
  X86Registers back;
  ASSERT_TRUE(UnpackX86Registers(raw, back));
  EXPECT_EQ(back.gpr[15], 0x100fu);
  EXPECT_EQ(back.rip, 0xabcu);
  EXPECT_EQ(back.cr3, 0u);  // control registers are read-only through gdb
  EXPECT_EQ(*PackX86Register(regs, kRegRip), (std::vector<uint8_t>{0xbc, 0x0a, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(X86RegisterSize(kRegEflags), 4u);
  EXPECT_EQ(X86RegisterSize(kRegCount), 0u);
  const std::string xml = X86TargetXml();
  EXPECT_NE(xml.find("<architecture>i386:x86-64</architecture>"), std::string::npos);
  EXPECT_NE(xml.find("org.gnu.gdb.i386.core"), std::string::npos);
  EXPECT_NE(xml.find("name=\"cr3\""), std::string::npos);
}

TEST_F(GdbServerTest, AnswersAStoppedTargetThenResumes) {
  Serve();
  EXPECT_NE(Ask("qSupported:swbreak+;hwbreak+").find("qXfer:features:read+"), std::string::npos);
  EXPECT_EQ(Ask("?"), "T05thread:01;");
  EXPECT_EQ(Ask("qC"), "QC1");
  EXPECT_EQ(Ask("qfThreadInfo"), "m1");
  EXPECT_EQ(Ask("qsThreadInfo"), "l");
  EXPECT_EQ(Ask("vMustReplyEmpty"), "");
  // Registers.
  const std::string g = Ask("g");
  EXPECT_EQ(g.size(), PackX86Registers(target_.regs).size() * 2);
  EXPECT_EQ(g.substr(0, 16), "8877665544332211");
  EXPECT_EQ(Ask("p10"), "2000100000000000");
  EXPECT_EQ(Ask("P10=3000100000000000"), "OK");
  EXPECT_EQ(target_.regs.rip, 0x100030u);
  EXPECT_EQ(Ask("p99"), "E01");
  // Memory: reads, a partial read at the end of what is mapped, writes.
  EXPECT_EQ(Ask("m1000,4"), "00010203");
  EXPECT_EQ(Ask("m100e,4"), "0e0f");
  EXPECT_EQ(Ask("m5000,4"), "E14");
  EXPECT_EQ(Ask("M1000,2:aabb"), "OK");
  EXPECT_EQ(target_.memory[0x1001], 0xbb);
  EXPECT_EQ(Ask("X1002,0:"), "OK");
  EXPECT_EQ(Ask("X1002,1:}\x03"), "OK");  // an escaped '#'
  EXPECT_EQ(target_.memory[0x1002], '#');
  // Breakpoints: accepted, refused with an error, or not supported at all.
  EXPECT_EQ(Ask("Z1,100020,1"), "OK");
  EXPECT_EQ(Ask("z1,100020,1"), "OK");
  EXPECT_EQ(Ask("Z2,1000,8"), "OK");  // refused, but gdb hears why only at a resume
  EXPECT_EQ(Ask("z2,1000,8"), "OK");  // removed before it mattered: never inserted
  EXPECT_EQ(Ask("Z3,1000,8"), "");
  EXPECT_EQ(target_.breakpoints, (std::vector<std::string>{"Z1,1048608", "z1,1048608"}));
  // The target description, in pieces.
  const std::string xml = X86TargetXml();
  const std::string first = Ask("qXfer:features:read:target.xml:0,20");
  EXPECT_EQ(first, "m" + xml.substr(0, 32));
  const std::string rest = Ask("qXfer:features:read:target.xml:20,100000");
  EXPECT_EQ(rest, "l" + xml.substr(32));
  // vCont resumes with a step.
  EXPECT_EQ(Ask("vCont?"), "vCont;c;C;s;S");
  Send("vCont;s:1;c");
  EXPECT_EQ(Resumed(), GdbServer::Action::kStep);
}

// A breakpoint the target refuses (FailedPrecondition) reaches gdb's console: at the
// next resume, as console output, with a stop where the target is instead of a run;
// once gdb removes it, the target resumes.
TEST_F(GdbServerTest, ARefusalIsSaidOnGdbsConsoleAtTheNextResume) {
  Serve();
  EXPECT_EQ(Ask("Z2,1000,8"), "OK");
  Send("c");
  const std::string console = Receive();
  ASSERT_EQ(console.substr(0, 1), "O") << console;
  std::optional<std::vector<uint8_t>> text = HexDecode(console.substr(1));
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(std::string(text->begin(), text->end()),
            "sigvisor: refused: no watchpoints here; the guest does not run while it is set: "
            "delete it\n");
  EXPECT_EQ(Receive(), "T05thread:01;");
  Send("vCont;s:1");  // a step is refused the same way
  EXPECT_EQ(Receive().substr(0, 1), "O");
  EXPECT_EQ(Receive(), "T05thread:01;");
  EXPECT_EQ(Ask("z2,1000,8"), "OK");
  EXPECT_TRUE(target_.breakpoints.empty());  // the target never saw it
  Send("c");
  EXPECT_EQ(Resumed(), GdbServer::Action::kContinue);
}

// A gdb that takes textual errors gets the refusal at once.
TEST_F(GdbServerTest, AGdbThatTakesTextualErrorsGetsTheRefusalAtOnce) {
  Serve();
  EXPECT_NE(Ask("qSupported:swbreak+;error-message+").find("error-message+"), std::string::npos);
  EXPECT_EQ(Ask("Z2,1000,8"), "E.no watchpoints here");
  Send("c");
  EXPECT_EQ(Resumed(), GdbServer::Action::kContinue);
}

TEST_F(GdbServerTest, ContinueAtAnAddressAndTheNextStopReply) {
  Serve();
  Send("c100040");
  EXPECT_EQ(Resumed(), GdbServer::Action::kContinue);
  EXPECT_EQ(target_.regs.rip, 0x100040u);
  Serve("T05hwbreak:;thread:01;");
  EXPECT_EQ(Receive(), "T05hwbreak:;thread:01;");
  EXPECT_EQ(Ask("?"), "T05hwbreak:;thread:01;");
  Send("k");
  EXPECT_EQ(Resumed(), GdbServer::Action::kKill);
}

TEST_F(GdbServerTest, DetachAnswersOkAndNoAckModeDropsAcks) {
  Serve();
  EXPECT_EQ(Ask("QStartNoAckMode"), "OK");
  EXPECT_EQ(Ask("qAttached"), "1");
  Send("D");
  EXPECT_EQ(Receive(), "OK");
  EXPECT_EQ(Resumed(), GdbServer::Action::kDetach);
}

TEST_F(GdbServerTest, ABadChecksumIsNakedAndTheConnectionClosingEndsServing) {
  Serve();
  const std::string bad = "$g#00";
  ASSERT_EQ(write(client_, bad.data(), bad.size()), 5);
  char c = 0;
  ASSERT_EQ(read(client_, &c, 1), 1);
  EXPECT_EQ(c, '-');
  shutdown(client_, SHUT_RDWR);
  thread_.join();
  EXPECT_FALSE(action_.ok());
}

TEST_F(GdbServerTest, AnOverlongPacketIsDroppedAndNakedThenServingGoesOn) {
  Serve();
  // 1 MiB without a '#': the server must not keep it all, and must refuse it.
  std::thread writer([this] {
    const std::string huge = "$" + std::string(1 << 20, 'm') + "#00";
    size_t sent = 0;
    while (sent < huge.size()) {
      const ssize_t n = write(client_, huge.data() + sent, huge.size() - sent);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  });
  char c = 0;
  ASSERT_EQ(read(client_, &c, 1), 1);
  writer.join();
  EXPECT_EQ(c, '-');
  EXPECT_EQ(Ask("qC"), "QC1");  // the connection still works
  shutdown(client_, SHUT_RDWR);
  thread_.join();
}

}  // namespace
}  // namespace sigvisor::gdb
