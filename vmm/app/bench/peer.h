// `sigvisor bench --peer qemu-kvm,qemu-tcg`: the same workloads on the same kernel
// image under QEMU (`qemu-system-x86_64 -kernel`, with KVM or TCG), beside sigvisor.
// The image boots there through its Multiboot header and, finding no sigvisor
// hypercall device, talks to COM1 and isa-debug-exit; QEMU has no exit ledger, so the
// per-op figures come from the guest's own timing lines ("divzero: 100 signal, 123456
// tsc cycles per signal"), measured with rdtsc around the same phase.
//
// The runs interleave: per repetition and workload, sigvisor's run and each peer's
// run back to back, the order reversed every other repetition, so that the two are
// paired under the same host conditions; each figure is then compared pair by pair
// (sign test, see ComparePaired). Each run's CPU time sits beside its wall time.
//
// JSON: an optional "peers" member of the sigvisor.bench/1 document (see
// docs/schema/sigvisor.bench-1.schema.json).
//
// This header is the whole interface; its parts are implemented one concern a file:
// peer_parse.cc (ParsePeerList, ParseTimingLines), peer_qemu.cc (FindPeer,
// RunPeerOnce; QEMU's process is peer_process.h's), peer_schedule.cc (TargetOrder,
// RunSideBySide), peer_clocks.cc (ProcessCostNow, HostTscKhz) and peer_format.cc
// (FormatPeerTable, PeersToJson; the pairs they compare are peer_pairing.h's).
#ifndef SIGVISOR_VMM_APP_BENCH_PEER_H_
#define SIGVISOR_VMM_APP_BENCH_PEER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "vmm/app/bench/results.h"
#include "vmm/app/bench/runner.h"
#include "vmm/app/bench/stats.h"

namespace sigvisor::bench {

// --peer's warm-up ops before each phase when --warmup is not given. QEMU's VM has run
// its firmware for seconds when a phase begins, sigvisor's for milliseconds, and a
// fresh VM's first hundreds of ms ran slower here (PVM): with one warm-up op, 21 pairs
// of 50-op phases had sigvisor 1.2-2.8% behind on three of five phases (p <= 0.027);
// with 300, all five within 0.7% (p >= 0.66; docs/bench-and-studies.md). Warm-up ops
// change no phase's counts.
inline constexpr uint64_t kPeerDefaultWarmupOps = 300;

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

// What one run cost the host: wall time from start to end, and the CPU time the VMM's
// process spent on it (user + system, every thread; KVM_RUN counts as system time).
// Wall minus CPU is mostly time spent waiting for a CPU when the host is loaded.
struct RunCost {
  uint64_t wall_ns = 0;
  uint64_t cpu_ns = 0;
  bool operator==(const RunCost&) const = default;
};

struct PeerRun {
  std::string workload;
  uint32_t repetition = 0;
  bool ok = false;          // the guest exited with 0 (QEMU status 1)
  int exit_status = -1;     // QEMU's
  std::string diagnosis;    // why not ok
  uint64_t wall_ns = 0;     // QEMU started to QEMU exited
  uint64_t cpu_ns = 0;      // QEMU's user + system time (wait4's rusage, all its threads)
  std::map<std::string, PeerPhase> phases;
};

struct PeerResult {
  PeerKind kind;
  std::string path;         // the binary found on PATH; empty when skipped before running
  bool skipped = false;
  std::string skip_reason;  // one line
  std::vector<PeerRun> runs;
};

// The peer as found on PATH: skipped, with the reason, when its binary is not there.
PeerResult FindPeer(const PeerKind& kind);

// One attempt at a peer run. `never_ran` is set when QEMU did not run the guest at
// all (no console output): the reason, in one line. On the peer's first attempt that
// makes the peer skipped (the accelerator or QEMU does not work here); later, the run
// counts as failed with its diagnosis.
struct PeerAttempt {
  PeerRun run;
  std::string never_ran;
};

// Runs `workload` once on `image_path` under the peer found by FindPeer, with the
// matrix's ops per measured phase, warm-up ops before each and guest RAM.
PeerAttempt RunPeerOnce(const PeerResult& peer, const std::string& image_path,
                        const std::string& workload, uint32_t repetition, const Matrix& matrix,
                        absl::Duration timeout);

// Which target runs when, within one repetition of one workload: 0 is sigvisor, i is
// peers[i - 1]. Even repetitions (0, 2, ...) run sigvisor first and the peers in
// order, odd ones the reverse, so that neither side always runs first (a host's load
// and caches drift between consecutive runs) and both share the same conditions.
std::vector<size_t> TargetOrder(uint32_t repetition, size_t peers);

// One run of the side-by-side schedule, as made.
struct SideBySideStep {
  uint32_t repetition = 0;
  size_t workload = 0;
  size_t target = 0;  // as TargetOrder
  bool operator==(const SideBySideStep&) const = default;
};

using PeerRunFunction =
    std::function<PeerAttempt(const PeerResult& peer, const std::string& workload,
                              uint32_t repetition)>;
// A reading of the two clocks RunCost subtracts (CLOCK_MONOTONIC and the process's
// CPU time); tests give a fake.
using CostClock = std::function<RunCost()>;
RunCost ProcessCostNow();

// A sigvisor run for the side-by-side bench: its sample, and the guest's console in
// `console` (its timing lines are what the peers report too).
using SigvisorRunFunction =
    std::function<absl::StatusOr<RunSample>(const RunSpec& spec, std::string* console)>;

struct SideBySideResult {
  BenchResult sigvisor;                 // as RunMatrix gives it
  std::vector<RunCost> sigvisor_costs;  // per run of sigvisor.runs, in the same order
  // Per run of sigvisor.runs: the guest's own timing lines, the same rdtsc window
  // (markers included) as a peer's, which the pairs compare.
  std::vector<std::map<std::string, PeerPhase>> sigvisor_lines;
  std::vector<PeerResult> peers;
  std::vector<SideBySideStep> order;  // every run made, in order (skipped peers' none)
};

// Runs `matrix` (one variant, one trap) under sigvisor and each peer, interleaved per
// repetition and workload in TargetOrder. `peers` come from FindPeer (a skipped one is
// never run). Interruption, progress and failures are RunMatrix's.
SideBySideResult RunSideBySide(const Matrix& matrix, const SigvisorRunFunction& sigvisor,
                               std::vector<PeerResult> peers, const PeerRunFunction& peer,
                               const RunnerOptions& options,
                               const CostClock& clock = ProcessCostNow);

// The host's TSC rate (KVM_GET_TSC_KHZ); 0 when unknown. Guest TSC = host TSC under
// sigvisor and QEMU/KVM; QEMU/TCG derives its TSC from the host clock at that rate.
uint64_t HostTscKhz(int kvm_fd);

// The side-by-side table (text) and the "peers" JSON member.
std::string FormatPeerTable(const SideBySideResult& result, uint64_t tsc_khz);
nlohmann::ordered_json PeersToJson(const SideBySideResult& result, uint64_t tsc_khz);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_PEER_H_
