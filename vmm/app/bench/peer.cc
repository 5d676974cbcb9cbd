#include "vmm/app/bench/peer.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <spawn.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "vmm/app/bench/stats.h"
#include "vmm/base/clock.h"
#include "vmm/base/unique_fd.h"

extern char** environ;

namespace sigvisor::bench {
namespace {

constexpr char kQemu[] = "qemu-system-x86_64";

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The first non-empty line of `text` (QEMU's own error), without its newline.
std::string FirstLine(const std::string& text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!line.empty()) return std::string(line);
  }
  return "";
}

// `binary` on $PATH, or "".
std::string FindOnPath(const std::string& binary) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    if (dir.empty()) continue;
    std::string candidate = absl::StrCat(dir, "/", binary);
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

struct Spawned {
  int status = -1;        // exit status, or -1 (killed, could not start)
  bool timed_out = false;
  uint64_t wall_ns = 0;
  uint64_t cpu_ns = 0;    // the child's user + system time, all its threads
  std::string error;      // could not start
};

uint64_t TimevalNs(const timeval& tv) {
  return uint64_t(tv.tv_sec) * 1000000000ull + uint64_t(tv.tv_usec) * 1000ull;
}

// Waits for `pid` until `deadline_ns` (CLOCK_MONOTONIC); false when it is still
// running then. Sleeps in poll() on a pidfd, so the wait takes no CPU from the run
// it times; without pidfds (old kernels) it polls every 500 us.
bool WaitUntil(pid_t pid, uint64_t deadline_ns) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  for (;;) {
    const uint64_t now = MonotonicNs();
    if (now >= deadline_ns) return false;
    if (pidfd.get() >= 0) {
      pollfd ready = {pidfd.get(), POLLIN, 0};
      const int ms = static_cast<int>(std::min<uint64_t>((deadline_ns - now) / 1000000 + 1, 1000));
      if (::poll(&ready, 1, ms) > 0) return true;
      continue;
    }
    siginfo_t info = {};
    if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

// Runs argv with stdin /dev/null and stdout/stderr into files; kills it after `timeout`.
Spawned Spawn(const std::vector<std::string>& argv, const std::string& out_path,
              const std::string& err_path, absl::Duration timeout) {
  Spawned result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const uint64_t start = MonotonicNs();
  pid_t pid;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    result.error = absl::StrFormat("cannot start %s: %s", argv[0], std::strerror(rc));
    return result;
  }
  const uint64_t deadline = start + static_cast<uint64_t>(absl::ToInt64Nanoseconds(timeout));
  if (!WaitUntil(pid, deadline)) {
    ::kill(pid, SIGKILL);
    result.timed_out = true;
  }
  int status = 0;
  struct rusage usage = {};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.wall_ns = MonotonicNs() - start;
  result.cpu_ns = TimevalNs(usage.ru_utime) + TimevalNs(usage.ru_stime);
  if (!result.timed_out && WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

double Median(std::vector<double> values) { return Summarize(values).median; }

std::string Num(double v, int decimals) { return absl::StrFormat("%.*f", decimals, v); }

}  // namespace

absl::StatusOr<std::vector<PeerKind>> ParsePeerList(const std::string& text) {
  std::vector<PeerKind> peers;
  for (absl::string_view raw : absl::StrSplit(text, ',')) {
    const std::string name(absl::StripAsciiWhitespace(raw));
    if (name.empty()) continue;
    PeerKind kind;
    if (name == "qemu-kvm") {
      kind = {name, kQemu, "kvm"};
    } else if (name == "qemu-tcg") {
      kind = {name, kQemu, "tcg"};
    } else {
      return absl::InvalidArgumentError(
          absl::StrFormat("--peer: '%s' is not a peer (give qemu-kvm, qemu-tcg or both)", name));
    }
    for (const PeerKind& seen : peers) {
      if (seen.name == name) {
        return absl::InvalidArgumentError(absl::StrFormat("--peer: %s is listed twice", name));
      }
    }
    peers.push_back(kind);
  }
  if (peers.empty()) return absl::InvalidArgumentError("--peer is empty (give qemu-kvm, qemu-tcg)");
  return peers;
}

std::map<std::string, PeerPhase> ParseTimingLines(const std::string& console,
                                                  const std::string& workload) {
  std::map<std::string, PeerPhase> phases;
  for (absl::string_view line : absl::StrSplit(console, '\n')) {
    const size_t colon = line.find(": ");
    const size_t per = line.find(" tsc cycles per ");
    if (colon == absl::string_view::npos || per == absl::string_view::npos || per < colon) {
      continue;
    }
    const absl::string_view name = line.substr(0, colon);
    const absl::string_view counts = line.substr(colon + 2, per - colon - 2);  // "100 signal, 123"
    const size_t space = counts.find(' ');
    const size_t comma = counts.rfind(", ");
    if (space == absl::string_view::npos || comma == absl::string_view::npos) continue;
    PeerPhase phase;
    if (!absl::SimpleAtoi(counts.substr(0, space), &phase.ops) ||
        !absl::SimpleAtoi(counts.substr(comma + 2), &phase.tsc_cycles_per_op)) {
      continue;
    }
    std::string phase_name(name);  // one word: the phase ("divzero", hello's "getpid")
    if (const size_t blank = name.find(' '); blank != absl::string_view::npos) {
      if (name.substr(0, blank) != workload) continue;
      phase_name = std::string(name.substr(blank + 1));
    }
    phases[absl::StrCat(workload, "/", phase_name)] = phase;
  }
  return phases;
}

PeerResult FindPeer(const PeerKind& kind) {
  PeerResult result;
  result.kind = kind;
  result.path = FindOnPath(kind.binary);
  if (result.path.empty()) {
    result.skipped = true;
    result.skip_reason =
        absl::StrFormat("%s is not on PATH (tools/setup.sh installs QEMU)", kind.binary);
  }
  return result;
}

PeerAttempt RunPeerOnce(const PeerResult& peer, const std::string& image_path,
                        const std::string& workload, uint32_t repetition, const Matrix& matrix,
                        absl::Duration timeout) {
  const PeerKind& kind = peer.kind;
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = absl::StrFormat("%s/sigvisor-%d-%s", tmp ? tmp : "/tmp", getpid(),
                                           kind.name);
  const std::string console_path = base + ".console", err_path = base + ".stderr";
  const std::vector<std::string> argv = {
      peer.path, "-accel", kind.accel, "-kernel", image_path, "-append",
      "kernel " + BundledKernelWords(workload, matrix), "-display", "none", "-serial",
      "file:" + console_path, "-monitor", "none", "-no-reboot", "-m",
      absl::StrCat(matrix.memory_mib), "-device", "isa-debug-exit,iobase=0xf4,iosize=4"};
  ::unlink(console_path.c_str());
  const Spawned spawned = Spawn(argv, "/dev/null", err_path, timeout);
  const std::string console = ReadFile(console_path);
  const std::string errors = ReadFile(err_path);
  ::unlink(console_path.c_str());
  ::unlink(err_path.c_str());
  PeerAttempt attempt;
  PeerRun& run = attempt.run;
  run.workload = workload;
  run.repetition = repetition;
  run.exit_status = spawned.status;
  run.wall_ns = spawned.wall_ns;
  run.cpu_ns = spawned.cpu_ns;
  run.phases = ParseTimingLines(console, workload);
  // isa-debug-exit: the guest's exit status 0 is QEMU's (0 << 1) | 1 = 1.
  if (!spawned.error.empty()) {
    run.diagnosis = spawned.error;
  } else if (spawned.timed_out) {
    run.diagnosis = absl::StrFormat("timed out after %s", absl::FormatDuration(timeout));
  } else if (spawned.status != 1) {
    run.diagnosis = absl::StrFormat("QEMU exited with %d (the guest's 0 gives 1)%s",
                                    spawned.status,
                                    errors.empty() ? "" : ": " + FirstLine(errors));
  } else {
    run.ok = true;  // a phase without a timing line shows as "-"
  }
  if (console.empty()) {
    // QEMU never ran the guest: the accelerator (or QEMU itself) does not work here.
    const std::string why = !spawned.error.empty() ? spawned.error
                            : spawned.timed_out   ? "no guest output before the timeout"
                                                  : FirstLine(errors);
    attempt.never_ran = absl::StrFormat("QEMU with -accel %s does not work here: %s", kind.accel,
                                        why.empty() ? "no guest output" : why);
  }
  return attempt;
}

std::vector<size_t> TargetOrder(uint32_t repetition, size_t peers) {
  std::vector<size_t> order(peers + 1);
  for (size_t i = 0; i <= peers; ++i) order[i] = i;
  if (repetition % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

RunCost ProcessCostNow() {
  timespec cpu;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  return {MonotonicNs(), uint64_t(cpu.tv_sec) * 1000000000ull + uint64_t(cpu.tv_nsec)};
}

SideBySideResult RunSideBySide(const Matrix& matrix, const SigvisorRunFunction& sigvisor,
                               std::vector<PeerResult> peers, const PeerRunFunction& peer,
                               const RunnerOptions& options, const CostClock& clock) {
  SideBySideResult result;
  result.peers = std::move(peers);
  auto run_peer = [&](size_t index, const RunSpec& spec) {
    PeerResult& p = result.peers[index];
    if (p.skipped) return;
    PeerAttempt attempt = peer(p, matrix.workloads[spec.workload], spec.repetition);
    if (!attempt.never_ran.empty() && p.runs.empty()) {
      p.skipped = true;
      p.skip_reason = attempt.never_ran;
      return;
    }
    result.order.push_back({spec.repetition, spec.workload, index + 1});
    p.runs.push_back(std::move(attempt.run));
  };
  // RunMatrix calls this once per sigvisor run, in schedule order (repetition, then
  // workload); the peers' runs of the same pair go before or after it.
  auto paired = [&](const RunSpec& spec) -> absl::StatusOr<RunSample> {
    absl::StatusOr<RunSample> sample = absl::UnknownError("not run");
    for (size_t target : TargetOrder(spec.repetition, result.peers.size())) {
      if (target > 0) {
        run_peer(target - 1, spec);
        continue;
      }
      std::string console;
      const RunCost before = clock();
      sample = sigvisor(spec, &console);
      const RunCost after = clock();
      result.sigvisor_costs.push_back(
          {after.wall_ns - before.wall_ns, after.cpu_ns - before.cpu_ns});
      result.sigvisor_lines.push_back(ParseTimingLines(console, matrix.workloads[spec.workload]));
      result.order.push_back({spec.repetition, spec.workload, 0});
    }
    return sample;
  };
  result.sigvisor = RunMatrix(matrix, paired, options);
  return result;
}

uint64_t HostTscKhz(int kvm_fd) {
  if (kvm_fd < 0) return 0;
  const int vm = ::ioctl(kvm_fd, KVM_CREATE_VM, 0);
  if (vm < 0) return 0;
  const int vcpu = ::ioctl(vm, KVM_CREATE_VCPU, 0);
  int khz = vcpu < 0 ? -1 : ::ioctl(vcpu, KVM_GET_TSC_KHZ, 0);
  if (vcpu >= 0) ::close(vcpu);
  ::close(vm);
  return khz > 0 ? static_cast<uint64_t>(khz) : 0;
}

namespace {

// Values of one figure of sigvisor and of one peer, paired by repetition (the two
// runs made next to each other), for one workload.
struct Pairing {
  std::vector<double> sigvisor, peer;  // by repetition, both present
  PairedComparison difference;         // of sigvisor[i] - peer[i]
};

using SigvisorMetric = std::function<std::optional<double>(size_t run)>;
using PeerMetric = std::function<std::optional<double>(const PeerRun&)>;

Pairing PairRuns(const SideBySideResult& result, const PeerResult& peer, size_t workload,
                 const SigvisorMetric& sigvisor_metric, const PeerMetric& peer_metric) {
  const BenchResult& sv = result.sigvisor;
  std::map<uint32_t, double> by_repetition;
  for (size_t i = 0; i < sv.runs.size(); ++i) {
    const RunSample& r = sv.runs[i];
    if (r.spec.workload != workload || !r.ok()) continue;
    if (std::optional<double> v = sigvisor_metric(i)) by_repetition[r.spec.repetition] = *v;
  }
  Pairing pairing;
  std::vector<double> differences;
  for (const PeerRun& r : peer.runs) {
    if (r.workload != sv.matrix.workloads[workload] || !r.ok) continue;
    auto mine = by_repetition.find(r.repetition);
    std::optional<double> theirs = peer_metric(r);
    if (mine == by_repetition.end() || !theirs) continue;
    pairing.sigvisor.push_back(mine->second);
    pairing.peer.push_back(*theirs);
    differences.push_back(mine->second - *theirs);
  }
  pairing.difference = ComparePaired(differences);
  return pairing;
}

// The guest's own cycles per op of `key` ("<workload>/<phase>") in a sigvisor run.
SigvisorMetric SigvisorCycles(const SideBySideResult& result, const std::string& key) {
  return [&result, key](size_t run) -> std::optional<double> {
    const auto& lines = result.sigvisor_lines[run];
    auto it = lines.find(key);
    if (it == lines.end()) return std::nullopt;
    return static_cast<double>(it->second.tsc_cycles_per_op);
  };
}
PeerMetric PeerCycles(const std::string& key) {
  return [key](const PeerRun& r) -> std::optional<double> {
    auto it = r.phases.find(key);
    if (it == r.phases.end()) return std::nullopt;
    return static_cast<double>(it->second.tsc_cycles_per_op);
  };
}
SigvisorMetric SigvisorCost(const SideBySideResult& result, bool cpu) {
  return [&result, cpu](size_t run) -> std::optional<double> {
    const RunCost& c = result.sigvisor_costs[run];
    return static_cast<double>(cpu ? c.cpu_ns : c.wall_ns);
  };
}
PeerMetric PeerCost(bool cpu) {
  return [cpu](const PeerRun& r) -> std::optional<double> {
    return static_cast<double>(cpu ? r.cpu_ns : r.wall_ns);
  };
}

// The phases a workload's runs reported (sigvisor's and the peers' timing lines), in
// the order sigvisor's cells list them, then any others by name.
std::vector<std::string> PhaseKeys(const SideBySideResult& result, size_t workload) {
  const std::string& name = result.sigvisor.matrix.workloads[workload];
  std::vector<std::string> keys;
  auto add = [&](const std::string& key) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  };
  for (const Cell& cell : Cells(result.sigvisor)) {
    if (cell.workload == workload) add(absl::StrCat(name, "/", cell.phase));
  }
  for (const auto& lines : result.sigvisor_lines) {
    for (const auto& [key, phase] : lines) {
      if (key.starts_with(name + "/")) add(key);
    }
  }
  for (const PeerResult& p : result.peers) {
    for (const PeerRun& r : p.runs) {
      if (r.workload != name) continue;
      for (const auto& [key, phase] : r.phases) add(key);
    }
  }
  return keys;
}

std::string Signed(double v, int decimals) { return absl::StrFormat("%+.*f", decimals, v); }

// "-12.3 us (-1.2%) [-30.1, +5.2] 96% CI; sigvisor above in 3 of 9 pairs, below in 6; sign
// test p = 0.51". `scale` turns the values into the unit shown.
std::string DescribePairing(const Pairing& pairing, double scale, const std::string& unit,
                            int decimals) {
  const PairedComparison& d = pairing.difference;
  if (d.pairs == 0) return "no pairs";
  const double peer_median = Summarize(pairing.peer).median;
  std::string out = absl::StrFormat("%s %s", Signed(d.median * scale, decimals), unit);
  if (peer_median != 0) absl::StrAppendFormat(&out, " (%+.1f%%)", 100 * d.median / peer_median);
  if (d.has_interval) {
    absl::StrAppendFormat(&out, " [%s, %s] %.1f%% interval", Signed(d.low * scale, decimals),
                          Signed(d.high * scale, decimals), 100 * d.coverage);
  } else {
    out += " [no 95% interval from fewer than 6 pairs]";
  }
  absl::StrAppendFormat(&out, "; sigvisor higher in %d of %d pairs, lower in %d; sign test p = %.3g",
                        d.above, d.pairs, d.below, d.sign_p);
  return out;
}

nlohmann::ordered_json PairingToJson(const Pairing& pairing) {
  const PairedComparison& d = pairing.difference;
  nlohmann::ordered_json interval = nullptr;
  if (d.has_interval) interval = {{"low", d.low}, {"high", d.high}, {"coverage", d.coverage}};
  return {{"pairs", d.pairs},
          {"sigvisor_median", Summarize(pairing.sigvisor).median},
          {"peer_median", Summarize(pairing.peer).median},
          {"difference_median", d.median},
          {"difference_interval", interval},
          {"sigvisor_higher", d.above},
          {"sigvisor_lower", d.below},
          {"sign_test_p", d.sign_p}};
}

std::string TargetName(const SideBySideResult& result, size_t target) {
  return target == 0 ? "sigvisor" : result.peers[target - 1].kind.name;
}

}  // namespace

std::string FormatPeerTable(const SideBySideResult& result, uint64_t tsc_khz) {
  const BenchResult& sigvisor = result.sigvisor;
  const Matrix& m = sigvisor.matrix;
  const std::vector<PeerResult>& peers = result.peers;
  std::vector<Cell> cells = Cells(sigvisor);
  std::string out = absl::StrFormat(
      "side by side: the bundled kernel (%s), %d ops per phase after %d warm-up, %d "
      "repetition%s, medians; the runs interleaved (sigvisor first in repetitions 1, 3, ..., "
      "last in 2, 4, ...); time per op from the guest's own timing line (TSC, %s)\n",
      m.variants.empty() ? "?" : m.variants[0].name, m.ops, m.warmup, m.repetitions,
      m.repetitions == 1 ? "" : "s",
      tsc_khz ? absl::StrFormat("%.4f GHz", tsc_khz / 1e6) : "rate unknown: cycles only");
  std::vector<std::string> columns = {"sigvisor"};
  for (const PeerResult& p : peers) columns.push_back(p.kind.name);
  auto row = [&](const std::string& workload, const std::string& phase, const std::string& metric,
                 const std::vector<std::string>& values) {
    std::string line = absl::StrFormat("%-12s %-12s %-22s", workload, phase, metric);
    for (const std::string& v : values) absl::StrAppendFormat(&line, " %14s", v);
    return line + "\n";
  };
  // The median of a figure over a target's ok runs of a workload.
  auto sigvisor_median = [&](size_t workload, const SigvisorMetric& metric) {
    std::vector<double> v;
    for (size_t i = 0; i < sigvisor.runs.size(); ++i) {
      const RunSample& r = sigvisor.runs[i];
      if (r.spec.workload != workload || !r.ok()) continue;
      if (std::optional<double> x = metric(i)) v.push_back(*x);
    }
    return v.empty() ? std::optional<double>() : Median(v);
  };
  auto peer_median = [&](const PeerResult& p, size_t workload, const PeerMetric& metric) {
    std::vector<double> v;
    for (const PeerRun& r : p.runs) {
      if (r.workload != m.workloads[workload] || !r.ok) continue;
      if (std::optional<double> x = metric(r)) v.push_back(*x);
    }
    return v.empty() ? std::optional<double>() : Median(v);
  };
  auto any_ok = [&](const PeerResult& p, size_t workload) {
    for (const PeerRun& r : p.runs) {
      if (r.workload == m.workloads[workload] && r.ok) return true;
    }
    return false;
  };
  auto sigvisor_any_ok = [&](size_t workload) {
    for (const RunSample& r : sigvisor.runs) {
      if (r.spec.workload == workload && r.ok()) return true;
    }
    return false;
  };
  // A row of one figure: sigvisor's median, then each peer's.
  auto figure_row = [&](size_t workload, const std::string& label, const std::string& phase,
                        const std::string& metric,
                        const SigvisorMetric& sv, const PeerMetric& peer, double scale,
                        int decimals) {
    std::vector<std::string> values;
    const std::optional<double> mine = sigvisor_median(workload, sv);
    values.push_back(mine ? Num(*mine * scale, decimals)
                          : sigvisor_any_ok(workload) ? "-" : "failed");
    for (const PeerResult& p : peers) {
      const std::optional<double> theirs = p.skipped ? std::nullopt
                                                     : peer_median(p, workload, peer);
      values.push_back(theirs      ? Num(*theirs * scale, decimals)
                       : p.skipped ? "skipped"
                       : any_ok(p, workload) ? "-" : "failed");
    }
    return row(label, phase, metric, values);
  };
  out += row("workload", "phase", "metric", columns);
  const double us_per_cycle = tsc_khz ? 1e3 / static_cast<double>(tsc_khz) : 0;
  std::string paired;
  for (size_t w = 0; w < m.workloads.size(); ++w) {
    const std::string& workload = m.workloads[w];
    // The whole run: sigvisor's VM from creation to teardown, QEMU's whole process.
    out += figure_row(w, workload, "-", "total run ms", SigvisorCost(result, false),
                      PeerCost(false), 1e-6, 2);
    for (const std::string& key : PhaseKeys(result, w)) {
      const std::string phase = key.substr(key.find('/') + 1);
      out += figure_row(w, "", phase, "tsc cycles per op", SigvisorCycles(result, key),
                        PeerCycles(key), 1, 0);
      if (tsc_khz) {
        out += figure_row(w, "", "", "us per op", SigvisorCycles(result, key), PeerCycles(key),
                          us_per_cycle, 2);
      }
      const Cell* cell = nullptr;
      for (const Cell& c : cells) {
        if (c.workload == w && c.variant == 0 && c.trap == 0 && c.phase == phase) cell = &c;
      }
      const bool sv_ok = cell != nullptr && !cell->samples.empty();
      std::vector<std::string> exits = {sv_ok ? Num(cell->per_op.exits, 2) : "-"};
      std::vector<std::string> traps = {sv_ok ? Num(cell->per_op.traps, 2) : "-"};
      std::vector<std::string> insns = {
          sv_ok && cell->per_op.kernel_insns ? Num(*cell->per_op.kernel_insns, 1) : "-"};
      for (size_t i = 0; i < peers.size(); ++i) {
        exits.push_back("n/a");
        traps.push_back("n/a");
        insns.push_back("n/a");
      }
      out += row("", "", "exits per op", exits);
      out += row("", "", "traps per op", traps);
      out += row("", "", "kernel insns per op", insns);
      for (const PeerResult& p : peers) {
        if (p.skipped) continue;
        const Pairing pairing = PairRuns(result, p, w, SigvisorCycles(result, key), PeerCycles(key));
        paired += absl::StrFormat(
            "  %s %s, %s per op: %s\n", workload, phase, p.kind.name,
            tsc_khz ? DescribePairing(pairing, us_per_cycle, "us", 2)
                    : DescribePairing(pairing, 1, "cycles", 0));
      }
    }
    // What the whole run took of a CPU, after its phases (their rows come first).
    out += figure_row(w, "", "-", "run CPU ms", SigvisorCost(result, true), PeerCost(true), 1e-6,
                      2);
    out += figure_row(
        w, "", "", "run CPU / wall %",
        [&](size_t run) -> std::optional<double> {
          const RunCost& c = result.sigvisor_costs[run];
          if (c.wall_ns == 0) return std::nullopt;
          return 100.0 * static_cast<double>(c.cpu_ns) / static_cast<double>(c.wall_ns);
        },
        [](const PeerRun& r) -> std::optional<double> {
          if (r.wall_ns == 0) return std::nullopt;
          return 100.0 * static_cast<double>(r.cpu_ns) / static_cast<double>(r.wall_ns);
        },
        1, 1);
    for (const PeerResult& p : peers) {
      if (p.skipped) continue;
      const Pairing cpu = PairRuns(result, p, w, SigvisorCost(result, true), PeerCost(true));
      paired += absl::StrFormat("  %s run CPU, %s: %s\n", workload, p.kind.name,
                                DescribePairing(cpu, 1e-6, "ms", 2));
    }
  }
  if (!paired.empty()) {
    out += "sigvisor - peer, paired by repetition (median difference, its distribution-free "
           "interval, the sign test):\n" + paired;
  }
  for (const PeerResult& p : peers) {
    if (p.skipped) {
      out += absl::StrFormat("%s: skipped: %s\n", p.kind.name, p.skip_reason);
      continue;
    }
    for (const PeerRun& r : p.runs) {
      if (!r.ok) {
        out += absl::StrFormat("%s: %s run %d failed: %s\n", p.kind.name, r.workload,
                               r.repetition + 1, r.diagnosis);
      }
    }
  }
  out += "n/a: QEMU has no exit ledger. A run is sigvisor's VM from creation to teardown and "
         "QEMU's whole process (its firmware included); run CPU is the process's user + system "
         "time over it, so CPU / wall below 100% is time spent waiting for a CPU.\n";
  return out;
}

nlohmann::ordered_json PeersToJson(const SideBySideResult& result, uint64_t tsc_khz) {
  const Matrix& m = result.sigvisor.matrix;
  auto phases_json = [](const std::map<std::string, PeerPhase>& phases) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [key, phase] : phases) {
      list.push_back({{"name", key.substr(key.find('/') + 1)},
                      {"ops", phase.ops},
                      {"tsc_cycles_per_op", phase.tsc_cycles_per_op}});
    }
    return list;
  };
  nlohmann::ordered_json order = nlohmann::ordered_json::array();
  for (const SideBySideStep& step : result.order) {
    order.push_back({{"repetition", step.repetition},
                     {"workload", m.workloads[step.workload]},
                     {"target", TargetName(result, step.target)}});
  }
  nlohmann::ordered_json sigvisor_runs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < result.sigvisor.runs.size(); ++i) {
    const RunSample& r = result.sigvisor.runs[i];
    sigvisor_runs.push_back({{"workload", m.workloads[r.spec.workload]},
                             {"repetition", r.spec.repetition},
                             {"ok", r.ok()},
                             {"wall_ns", result.sigvisor_costs[i].wall_ns},
                             {"cpu_ns", result.sigvisor_costs[i].cpu_ns},
                             {"phases", phases_json(result.sigvisor_lines[i])}});
  }
  nlohmann::ordered_json targets = nlohmann::ordered_json::array();
  for (const PeerResult& p : result.peers) {
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    for (const PeerRun& r : p.runs) {
      runs.push_back({{"workload", r.workload},
                      {"repetition", r.repetition},
                      {"ok", r.ok},
                      {"exit_status", r.exit_status},
                      {"diagnosis", r.diagnosis},
                      {"wall_ns", r.wall_ns},
                      {"cpu_ns", r.cpu_ns},
                      {"phases", phases_json(r.phases)}});
    }
    nlohmann::ordered_json comparisons = nlohmann::ordered_json::array();
    for (size_t w = 0; w < m.workloads.size() && !p.skipped; ++w) {
      auto add = [&](const nlohmann::ordered_json& phase, const char* metric,
                     const Pairing& pairing) {
        nlohmann::ordered_json c = {
            {"workload", m.workloads[w]}, {"phase", phase}, {"metric", metric}};
        c.update(PairingToJson(pairing));
        comparisons.push_back(std::move(c));
      };
      for (const std::string& key : PhaseKeys(result, w)) {
        add(key.substr(key.find('/') + 1), "tsc_cycles_per_op",
            PairRuns(result, p, w, SigvisorCycles(result, key), PeerCycles(key)));
      }
      add(nullptr, "run_wall_ns",
          PairRuns(result, p, w, SigvisorCost(result, false), PeerCost(false)));
      add(nullptr, "run_cpu_ns", PairRuns(result, p, w, SigvisorCost(result, true), PeerCost(true)));
    }
    targets.push_back({{"name", p.kind.name},
                       {"binary", p.path.empty() ? p.kind.binary : p.path},
                       {"accel", p.kind.accel},
                       {"skipped", p.skipped},
                       {"skip_reason", p.skip_reason},
                       {"runs", runs},
                       {"comparisons", comparisons}});
  }
  return {{"tsc_khz", tsc_khz},
          {"order", order},
          {"sigvisor_runs", sigvisor_runs},
          {"targets", targets}};
}

}  // namespace sigvisor::bench
