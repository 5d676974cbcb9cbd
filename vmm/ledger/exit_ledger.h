// The exit ledger: every VM exit, by reason ("io", "mmio", "hlt", ...) and by detail
// ("port 0x501 out (hypercall console_write)"), with the VMM's handling latency.
//
// The run loop records a typed ExitKey (the exit's kind and what it touched) in a
// small flat table: no string is formatted or allocated per exit. Names come only
// when a report asks (by_reason, by_detail): a device access is named by its
// device's AccessName, which the run looks up once per distinct access after the
// run (NameAccesses, while the machine's bus is still there).
#ifndef SIGVISOR_VMM_LEDGER_EXIT_LEDGER_H_
#define SIGVISOR_VMM_LEDGER_EXIT_LEDGER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "vmm/ledger/latency.h"
#include "vmm/run/vm_exit.h"

namespace sigvisor {

// What an exit was, as the run loop knows it without naming anything.
struct ExitKey {
  enum class Detail : uint8_t {
    kNone,      // nothing more: the reason alone
    kAccess,    // kIo/kMmio: an access at port or address `value`, `is_write`
    kSuberror,  // kInternalError: KVM's suberror `value`
    kText,      // an interceptor's words: the ledger's text `value` (Record(kind, text))
  };
  ExitKind kind = ExitKind::kUnknown;
  Detail detail = Detail::kNone;
  bool is_write = false;
  uint64_t value = 0;

  friend bool operator==(const ExitKey&, const ExitKey&) = default;
};

// The ledger's words for an exit: "port 0x3f8 out (serial)", "mmio 0x1f100008 write
// (hypercall exit)", "msr 0x830 write (x2apic ICR)", "suberror 1"; `access_name` names an access's
// device register and `text` is a kText key's words.
std::string ExitDetail(const ExitKey& key, std::string_view access_name, std::string_view text);

// Exit counts by reason: what a phase boundary remembers. Transparent, so a count
// can be found by a view without making a string (the trap ledger counts inside an
// exit's timed interval).
using ExitCounts = std::map<std::string, uint64_t, std::less<>>;

class ExitLedger {
 public:
  // One exit, `handle_ns` being the VMM's handling time (the run loop's comment
  // says which interval). Allocates only the first time a key is seen.
  void Record(const ExitKey& key, uint64_t handle_ns);
  // One exit with words for its detail (an interceptor's, "watchdog"; "" for none).
  void Record(ExitKind kind, std::string_view text, uint64_t handle_ns);

  // Names every access recorded and not yet named: `name(key)` is its device's
  // AccessName ("serial", "hypercall console_write", "nothing").
  void NameAccesses(absl::FunctionRef<std::string(const ExitKey&)> name);

  // Adds another ledger's exits (another vCPU's: a multi-vCPU run reports one ledger).
  void Merge(const ExitLedger& other);

  uint64_t total() const { return total_; }
  // For reports: by reason name, and by (reason, detail) in name order.
  std::map<std::string, LatencyStats> by_reason() const;
  std::map<std::pair<std::string, std::string>, LatencyStats> by_detail() const;
  ExitCounts Counts() const;

 private:
  struct Row {
    ExitKey key;
    LatencyStats stats;
    std::string access_name;  // kAccess, once named
  };
  Row& RowOf(const ExitKey& key);

  uint64_t total_ = 0;
  std::vector<Row> rows_;  // a handful: a scan, the last hit first
  size_t last_ = 0;
  std::vector<std::string> texts_;  // kText keys' words, by index
};

// after - before, per reason (reasons absent from `before` count from 0).
ExitCounts Subtract(const ExitCounts& after, const ExitCounts& before);
uint64_t Sum(const ExitCounts& counts);

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_LEDGER_EXIT_LEDGER_H_
