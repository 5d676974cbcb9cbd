#include "vmm/app/bench/peer.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include <cstring>
#include <cerrno>
#include "vmm/base/clock.h"
#include "vmm/app/bench/stats.h"

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
  std::string error;      // could not start
};

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
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (MonotonicNs() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  result.wall_ns = MonotonicNs() - start;
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

PeerResult RunPeer(const PeerKind& kind, const std::string& image_path,
                   const std::vector<std::string>& workloads, uint64_t ops,
                   uint32_t repetitions, uint32_t memory_mib, absl::Duration timeout) {
  PeerResult result;
  result.kind = kind;
  result.path = FindOnPath(kind.binary);
  if (result.path.empty()) {
    result.skipped = true;
    result.skip_reason =
        absl::StrFormat("%s is not on PATH (tools/setup.sh installs QEMU)", kind.binary);
    return result;
  }
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = absl::StrFormat("%s/sigvisor-%d-%s", tmp ? tmp : "/tmp", getpid(),
                                           kind.name);
  const std::string console_path = base + ".console", err_path = base + ".stderr";
  for (uint32_t rep = 0; rep < repetitions; ++rep) {
    for (const std::string& workload : workloads) {
      const std::vector<std::string> argv = {
          result.path, "-accel", kind.accel, "-kernel", image_path, "-append",
          absl::StrFormat("kernel workload=%s ops=%d", workload, ops), "-display", "none",
          "-serial", "file:" + console_path, "-monitor", "none", "-no-reboot", "-m",
          absl::StrCat(memory_mib), "-device", "isa-debug-exit,iobase=0xf4,iosize=4"};
      ::unlink(console_path.c_str());
      Spawned spawned = Spawn(argv, "/dev/null", err_path, timeout);
      const std::string console = ReadFile(console_path);
      const std::string errors = ReadFile(err_path);
      if (result.runs.empty() && console.empty()) {
        // QEMU never ran the guest: the accelerator (or QEMU itself) does not work here.
        result.skipped = true;
        const std::string why = !spawned.error.empty() ? spawned.error
                                : spawned.timed_out   ? "no guest output before the timeout"
                                                      : FirstLine(errors);
        result.skip_reason = absl::StrFormat("QEMU with -accel %s does not work here: %s",
                                             kind.accel, why.empty() ? "no guest output" : why);
        break;
      }
      PeerRun run;
      run.workload = workload;
      run.repetition = rep;
      run.exit_status = spawned.status;
      run.wall_ns = spawned.wall_ns;
      run.phases = ParseTimingLines(console, workload);
      // isa-debug-exit: the guest's exit status 0 is QEMU's (0 << 1) | 1 = 1.
      if (spawned.timed_out) {
        run.diagnosis = absl::StrFormat("timed out after %s", absl::FormatDuration(timeout));
      } else if (spawned.status != 1) {
        run.diagnosis = absl::StrFormat("QEMU exited with %d (the guest's 0 gives 1)%s",
                                        spawned.status,
                                        errors.empty() ? "" : ": " + FirstLine(errors));
      } else {
        run.ok = true;  // a phase without a timing line shows as "-"
      }
      result.runs.push_back(std::move(run));
    }
    if (result.skipped) break;
  }
  ::unlink(console_path.c_str());
  ::unlink(err_path.c_str());
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

std::string FormatPeerTable(const BenchResult& sigvisor, const std::vector<PeerResult>& peers,
                            uint64_t tsc_khz) {
  const Matrix& m = sigvisor.matrix;
  std::vector<Cell> cells = Cells(sigvisor);
  std::string out = absl::StrFormat(
      "side by side: the bundled kernel (%s), %d ops per phase, %d repetition%s, medians; "
      "time per op from the guest's TSC (%s)\n",
      m.variants.empty() ? "?" : m.variants[0].name, m.ops, m.repetitions,
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
  out += row("workload", "phase", "metric", columns);
  for (const std::string& workload : m.workloads) {
    // Total run time: boot to exit (sigvisor: its run; QEMU: the process).
    std::vector<std::string> totals;
    std::vector<double> sv;
    for (const RunSample& r : sigvisor.runs) {
      if (r.spec.workload < m.workloads.size() && m.workloads[r.spec.workload] == workload &&
          r.ok()) {
        sv.push_back(r.wall_ns / 1e6);
      }
    }
    totals.push_back(sv.empty() ? "failed" : Num(Median(sv), 2));
    for (const PeerResult& p : peers) {
      if (p.skipped) {
        totals.push_back("skipped");
        continue;
      }
      std::vector<double> v;
      for (const PeerRun& r : p.runs) {
        if (r.workload == workload && r.ok) v.push_back(r.wall_ns / 1e6);
      }
      totals.push_back(v.empty() ? "failed" : Num(Median(v), 2));
    }
    out += row(workload, "-", "total run ms", totals);
    // Phases: in the order the guest ran them under sigvisor.
    for (const Cell& cell : cells) {
      if (m.workloads[cell.workload] != workload || cell.variant != 0 || cell.trap != 0) continue;
      const std::string key = absl::StrCat(workload, "/", cell.phase);
      std::vector<std::string> cycles, us, exits, traps, insns;
      const bool sv_ok = !cell.samples.empty();
      // A time the marker calibration swallowed in every run is no figure.
      const std::string sv_time = !sv_ok ? "failed" : cell.tsc.n == 0 ? "unmeasured" : "";
      cycles.push_back(sv_time.empty() ? Num(cell.tsc.median, 0) : sv_time);
      us.push_back(!sv_time.empty() ? sv_time
                   : tsc_khz       ? Num(cell.tsc.median / (tsc_khz / 1e3), 2)
                                   : "-");
      exits.push_back(sv_ok ? Num(cell.per_op.exits, 2) : "failed");
      traps.push_back(sv_ok ? Num(cell.per_op.traps, 2) : "failed");
      insns.push_back(sv_ok && cell.per_op.kernel_insns ? Num(*cell.per_op.kernel_insns, 1)
                                                         : sv_ok ? "-" : "failed");
      for (const PeerResult& p : peers) {
        std::vector<double> v;
        for (const PeerRun& r : p.runs) {
          if (r.workload != workload || !r.ok) continue;
          auto it = r.phases.find(key);
          if (it != r.phases.end()) v.push_back(static_cast<double>(it->second.tsc_cycles_per_op));
        }
        bool any_ok = false;
        for (const PeerRun& r : p.runs) any_ok = any_ok || (r.workload == workload && r.ok);
        const std::string none = p.skipped ? "skipped" : any_ok ? "-" : "failed";
        cycles.push_back(v.empty() ? none : Num(Median(v), 0));
        us.push_back(v.empty() ? none : tsc_khz ? Num(Median(v) / (tsc_khz / 1e3), 2) : "-");
        exits.push_back("n/a");
        traps.push_back("n/a");
        insns.push_back("n/a");
      }
      out += row("", cell.phase, "tsc cycles per op", cycles);
      out += row("", "", "us per op", us);
      out += row("", "", "exits per op", exits);
      out += row("", "", "traps per op", traps);
      out += row("", "", "kernel insns per op", insns);
    }
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
  out += "n/a: QEMU has no exit ledger; total run ms is boot to exit (QEMU: the whole process)\n";
  return out;
}

nlohmann::ordered_json PeersToJson(const std::vector<PeerResult>& peers, uint64_t tsc_khz) {
  nlohmann::ordered_json targets = nlohmann::ordered_json::array();
  for (const PeerResult& p : peers) {
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    for (const PeerRun& r : p.runs) {
      nlohmann::ordered_json phases = nlohmann::ordered_json::array();
      for (const auto& [key, phase] : r.phases) {
        phases.push_back({{"name", key.substr(key.find('/') + 1)},
                          {"ops", phase.ops},
                          {"tsc_cycles_per_op", phase.tsc_cycles_per_op}});
      }
      runs.push_back({{"workload", r.workload},
                      {"repetition", r.repetition},
                      {"ok", r.ok},
                      {"exit_status", r.exit_status},
                      {"diagnosis", r.diagnosis},
                      {"wall_ns", r.wall_ns},
                      {"phases", phases}});
    }
    targets.push_back({{"name", p.kind.name},
                       {"binary", p.path.empty() ? p.kind.binary : p.path},
                       {"accel", p.kind.accel},
                       {"skipped", p.skipped},
                       {"skip_reason", p.skip_reason},
                       {"runs", runs}});
  }
  return {{"tsc_khz", tsc_khz}, {"targets", targets}};
}

}  // namespace sigvisor::bench
