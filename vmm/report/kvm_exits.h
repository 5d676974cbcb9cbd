// KVM's own exits, beside the exits that reached the VMM. Most of what makes a guest
// leave the CPU ends in KVM and goes back in without the VMM seeing it: a phase whose
// VMM exits are 0 per op can still cost KVM several exits per op (on a PVM host, the
// exceptions by which user code enters the guest kernel and the emulator's batches of
// kernel instructions). KVM counts them in its per-vCPU statistics (vmm/kvm/stats_fd.h),
// which the run samples at every phase marker like everything else.
//
// kKvmExitsTotal and kKvmExitReasons are the one table of which statistics count
// exits, and by what reason, with a line on what each counts: the run's text and JSON
// reports, bench (text, JSON, CSV), study and docs/json.md ("KVM's own exits", checked
// against this table by tests/kvm_exits_docs_test.cc) all take them from here, and
// kvm_stat_check.h takes from it which statistics to check against the VMM's own count.
#ifndef SIGVISOR_VMM_REPORT_KVM_EXITS_H_
#define SIGVISOR_VMM_REPORT_KVM_EXITS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vmm/base/stats_snapshot.h"

namespace sigvisor {

struct KvmExitStat {
  const char* name;     // KVM's statistic, as KVM_GET_STATS_FD names it
  const char* meaning;  // one line: what it counts
  // The VMM's exit reason (the ExitLedger's) each of whose exits this statistic also
  // counts, so that a host whose KVM keeps it counts at least as many
  // (kvm_stat_check.h): "" for every exit; nullptr: not checked.
  const char* vmm_reason;
};

// KVM's total: every exit, whatever its reason.
inline constexpr KvmExitStat kKvmExitsTotal = {
    "exits",
    "every exit from the guest to KVM, whatever its reason: those KVM handled itself and those "
    "it passed on to the VMM",
    ""};

// KVM's exits by the reasons its statistics give, and the work it counts per exit
// beside them (the emulator's instructions, the L1D flushes on entry). They overlap
// (an MMIO exit is also an emulated instruction) and do not add up to `exits`. The
// checked ones come first, in the order kvm_stats_left_out has always listed them.
inline constexpr KvmExitStat kKvmExitReasons[] = {
    {"io_exits",
     "port I/O instructions that exited (those no in-kernel device takes reach the VMM, "
     "KVM_EXIT_IO)",
     "io"},
    {"mmio_exits", "MMIO accesses KVM passed on to the VMM (KVM_EXIT_MMIO)", "mmio"},
    {"halt_exits",
     "the guest's hlt instructions (without an in-kernel irqchip each also reaches the VMM, "
     "KVM_EXIT_HLT)",
     "hlt"},
    {"signal_exits",
     "returns from KVM_RUN because a signal was pending for the vCPU's thread (KVM_EXIT_INTR)",
     "interrupted"},
    {"irq_exits",
     "host interrupts (timer ticks, IPIs) that arrived while the guest ran: the host's, not the "
     "guest's",
     nullptr},
    {"request_irq_exits",
     "returns to the VMM because it asked for an interrupt window (KVM_EXIT_IRQ_WINDOW_OPEN)",
     nullptr},
    {"irq_window_exits", "exits at the moment the guest could take an interrupt KVM held pending",
     nullptr},
    {"nmi_window_exits", "exits at the moment the guest could take an NMI KVM held pending",
     nullptr},
    {"notify_window_exits",
     "VMX notify exits: the guest stayed too long where no interrupt could be delivered", nullptr},
    {"pf_taken",
     "page faults KVM's MMU handled: #PF exits under shadow paging, EPT/NPT violations under "
     "nested paging",
     nullptr},
    {"hypercalls", "KVM's own hypercalls (vmcall, vmmcall) that KVM handled", nullptr},
    {"insn_emulation", "instructions KVM ran through its instruction emulator", nullptr},
    {"insn_emulation_fail",
     "instructions KVM's emulator could not run (an exception injected into the guest, or "
     "KVM_EXIT_INTERNAL_ERROR)",
     nullptr},
    {"l1d_flush",
     "L1 data cache flushes before entering the guest (the L1TF mitigation): a cost of each entry, "
     "not an exit",
     nullptr},
};

// KVM's exits over a span (a phase, a run).
struct KvmExits {
  std::optional<uint64_t> total;  // `exits`; nullopt where it is not among the statistics
  // The kKvmExitReasons that are non-zero, in the table's order.
  std::vector<std::pair<std::string, uint64_t>> by_reason;
};

// The KVM exits in `stats`, a span's deltas without the statistics the host does not
// keep (kvm_stat_check.h: WithoutUncounted). nullopt when `stats` is empty: the host
// gave no statistics (no KVM_GET_STATS_FD), and there is nothing to say but that.
std::optional<KvmExits> KvmExitsOf(const StatsSnapshot& stats);

// What the reports say, once, where the host gave no statistics.
inline constexpr char kNoKvmStatistics[] =
    "this host's KVM gives no statistics (no KVM_GET_STATS_FD): KVM's own exits are not known";

}  // namespace sigvisor

#endif  // SIGVISOR_VMM_REPORT_KVM_EXITS_H_
