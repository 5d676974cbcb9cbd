// `sigvisor bench --peer qemu-kvm,qemu-tcg`: the same workloads on the same kernel
// image under QEMU (`qemu-system-x86_64 -kernel`, with KVM or TCG), beside sigvisor.
// The image boots there through its Multiboot header and, finding no sigvisor
// hypercall device, talks to COM1 and isa-debug-exit; QEMU has no exit ledger, so the
// per-op figures come from the guest's own timing lines ("divzero: 100 signal, 123456
// tsc cycles per signal"), measured with rdtsc around the same phase.
//
// JSON: an optional "peers" member of the sigvisor.bench/1 document (see
// docs/schema/sigvisor.bench-1.schema.json).
#ifndef SIGVISOR_VMM_APP_BENCH_PEER_H_
#define SIGVISOR_VMM_APP_BENCH_PEER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vmm/app/bench/results.h"

namespace sigvisor::bench {

// A peer VMM the bench can compare against.
struct PeerKind {
  std::string name;    // "qemu-kvm"
  std::string binary;  // "qemu-system-x86_64"
  std::string accel;   // "kvm"
};

// "qemu-kvm,qemu-tcg" -> the peers, in order; unknown names and repeats refused.
absl::StatusOr<std::vector<PeerKind>> ParsePeerList(const std::string& text);

// The guest's timing line of one phase, keyed "<workload>/<phase>".
struct PeerPhase {
  uint64_t ops = 0;
  uint64_t tsc_cycles_per_op = 0;
};
// Parses "NAME: OPS UNIT, CYCLES tsc cycles per UNIT" lines; NAME is "<phase>" or
// "<workload> <phase>" (lines naming another workload are skipped).
std::map<std::string, PeerPhase> ParseTimingLines(const std::string& console,
                                                  const std::string& workload);

struct PeerRun {
  std::string workload;
  uint32_t repetition = 0;
  bool ok = false;          // the guest exited with 0 (QEMU status 1)
  int exit_status = -1;     // QEMU's
  std::string diagnosis;    // why not ok
  uint64_t wall_ns = 0;     // QEMU started to QEMU exited
  std::map<std::string, PeerPhase> phases;
};

struct PeerResult {
  PeerKind kind;
  std::string path;         // the binary found on PATH; empty when skipped before running
  bool skipped = false;
  std::string skip_reason;  // one line
  std::vector<PeerRun> runs;
};

// Runs `workloads` x `repetitions` of `image_path` under the peer, with `ops` per
// measured phase. A missing binary, or an accelerator QEMU cannot start here (the
// first run prints nothing and QEMU says why on stderr), makes the peer skipped.
PeerResult RunPeer(const PeerKind& kind, const std::string& image_path,
                   const std::vector<std::string>& workloads, uint64_t ops,
                   uint32_t repetitions, uint32_t memory_mib, absl::Duration timeout);

// The host's TSC rate (KVM_GET_TSC_KHZ); 0 when unknown. Guest TSC = host TSC under
// sigvisor and QEMU/KVM; QEMU/TCG derives its TSC from the host clock at that rate.
uint64_t HostTscKhz(int kvm_fd);

// The side-by-side table (text) and the "peers" JSON member.
std::string FormatPeerTable(const BenchResult& sigvisor, const std::vector<PeerResult>& peers,
                            uint64_t tsc_khz);
nlohmann::ordered_json PeersToJson(const std::vector<PeerResult>& peers, uint64_t tsc_khz);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_PEER_H_
