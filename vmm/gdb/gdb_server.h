// The gdb stub's protocol side: the packets of the GDB Remote Serial Protocol that a
// stopped target answers (registers, memory, breakpoints, the target description,
// threads, features) and the ones that resume it (c, s, vCont, D, k), over an
// abstract target. One vCPU is thread 1; the target is x86-64
// (x86_64_target.h describes its registers).
//
// Serve() runs while the guest is stopped: it sends the stop reply, answers gdb
// until gdb resumes, detaches or kills, and says which.
//
// Refusals reach gdb's console, not only sigvisor's stderr. A gdb that takes textual
// errors (qSupported error-message+) gets "E.<why>" at once. Older ones (Debian 12's
// gdb 13) show their own words for a failed Z0, Z2 or Z4 ("Cannot access memory", "too
// many hardware breakpoints"), whatever the stub says, and take console text only
// while the target runs. So the refused breakpoint is acknowledged, never inserted,
// and at gdb's next continue or step the stub prints why on gdb's console ('O'
// packets) and reports a stop where the guest is, instead of running it, until gdb
// deletes the breakpoint: the guest never runs past a breakpoint it was asked for and
// cannot honour.
#ifndef SIGVISOR_VMM_GDB_GDB_SERVER_H_
#define SIGVISOR_VMM_GDB_GDB_SERVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/gdb/rsp.h"

namespace sigvisor::gdb {

// Z packet types.
enum class BreakType { kSoftware = 0, kHardware = 1, kWrite = 2, kRead = 3, kAccess = 4 };

class GdbTarget {
 public:
  virtual ~GdbTarget() = default;
  // The target description XML (qXfer:features:read:target.xml).
  virtual std::string TargetXml() = 0;
  // Registers in the description's order, raw little-endian; `g`/`G`, `p`/`P`.
  virtual absl::StatusOr<std::vector<uint8_t>> ReadRegisters() = 0;
  virtual absl::Status WriteRegisters(std::span<const uint8_t> raw) = 0;
  virtual absl::StatusOr<std::vector<uint8_t>> ReadRegister(int number) = 0;
  virtual absl::Status WriteRegister(int number, std::span<const uint8_t> raw) = 0;
  // Guest-virtual memory (through the current page tables).
  virtual absl::StatusOr<std::vector<uint8_t>> ReadMemory(uint64_t address, size_t length) = 0;
  virtual absl::Status WriteMemory(uint64_t address, std::span<const uint8_t> data) = 0;
  // Z/z: an error's message goes to gdb (where it takes text) and to stderr. A
  // FailedPrecondition error is a refusal: the host cannot honour that breakpoint or
  // watchpoint (GdbServer says so on gdb's console).
  virtual absl::Status InsertBreakpoint(BreakType type, uint64_t address, int kind) = 0;
  virtual absl::Status RemoveBreakpoint(BreakType type, uint64_t address, int kind) = 0;
  // `c ADDR` / `s ADDR`: resume at another address.
  virtual absl::Status SetPc(uint64_t pc) = 0;
};

class GdbServer {
 public:
  enum class Action { kContinue, kStep, kDetach, kKill };

  // `target` must outlive the server.
  GdbServer(std::unique_ptr<RspConnection> connection, GdbTarget& target);

  // Sends `stop_reply` (nothing when empty: gdb has not asked yet), then answers
  // packets until one resumes the target. An error: the connection is gone (the
  // caller treats it as a detach).
  absl::StatusOr<Action> Serve(const std::string& stop_reply);

  // Tells gdb the run is over (`W` exit status, `X` signal) and closes.
  void Finish(const std::string& reply);

  RspConnection& connection() { return *connection_; }
  bool no_ack() const { return no_ack_; }

 private:
  // The answer to one packet; sets `action` when it resumes.
  std::string Handle(const std::string& packet, std::optional<Action>& action);
  std::string Error(const absl::Status& status);
  std::string HandleQuery(const std::string& packet);
  std::string HandleBreakpoint(const std::string& packet);
  std::string HandleVCont(const std::string& packet, std::optional<Action>& action);
  // The reply to a resume request while refusals are pending: prints them on gdb's
  // console and stops again.
  std::string RefuseToResume();

  std::unique_ptr<RspConnection> connection_;
  GdbTarget& target_;
  std::string last_stop_ = "T05thread:01;";
  bool no_ack_ = false;
  bool error_messages_ = false;  // gdb takes "E.text"
  bool killed_ = false;
  // Breakpoints refused but acknowledged (see above): "TYPE,ADDR,KIND" -> why.
  std::map<std::string, std::string> refused_;
};

}  // namespace sigvisor::gdb

#endif  // SIGVISOR_VMM_GDB_GDB_SERVER_H_
