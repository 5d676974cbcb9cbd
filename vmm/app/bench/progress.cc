#include "vmm/app/bench/progress.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "absl/strings/str_format.h"
#include "vmm/app/bench/bench_format.h"
#include "vmm/base/clock.h"

namespace sigvisor::bench {
namespace {

std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) {
  g_interrupted.store(true);
  static const char kMessage[] =
      "\nsigvisor: interrupted: finishing the current run, then reporting what completed "
      "(interrupt again to quit at once)\n";
  ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
}

std::string Seconds(uint64_t ns) {
  const uint64_t s = ns / 1'000'000'000;
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%.1fs", static_cast<double>(ns) / 1e9);
}

}  // namespace

void InstallInterruptHandler() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: KVM_RUN returns EINTR, which the run loop treats as a stray kick
  // and re-enters. SA_RESETHAND: the second signal kills as usual.
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool InterruptRequested() { return g_interrupted.load(); }

ProgressPrinter::ProgressPrinter(size_t total_runs, FILE* out, uint64_t quiet_for_ns)
    : total_(total_runs),
      out_(out),
      start_ns_(MonotonicNs()),
      quiet_for_ns_(quiet_for_ns),
      tty_(isatty(fileno(out)) != 0) {}

ProgressPrinter::~ProgressPrinter() { Finish(); }

std::function<void(const Progress&)> ProgressPrinter::Callback(const Matrix& matrix,
                                                               std::string label) {
  done_before_ += matrix_total_;
  matrix_total_ = 0;
  return [this, &matrix, label = std::move(label)](const Progress& progress) {
    matrix_total_ = progress.total;
    Report(matrix, label, progress);
  };
}

void ProgressPrinter::Report(const Matrix& matrix, const std::string& label,
                             const Progress& progress) {
  const uint64_t now = MonotonicNs();
  const uint64_t elapsed = now - start_ns_;
  const size_t done = done_before_ + progress.done;
  const bool last = done >= total_;
  if (elapsed < quiet_for_ns_ || (!last && now - last_print_ns_ < 1'000'000'000)) return;
  last_print_ns_ = now;
  std::string line = absl::StrFormat("%s[%d/%d] %s elapsed", label.empty() ? "" : label + " ",
                                     done, total_, Seconds(elapsed));
  if (!last && done > 0) {
    const double per_run = static_cast<double>(elapsed) / static_cast<double>(done);
    absl::StrAppendFormat(&line, ", ~%s left",
                          Seconds(static_cast<uint64_t>(per_run * double(total_ - done))));
  }
  if (const RunSample* run = progress.last) {
    absl::StrAppendFormat(&line, "; %s %s trap %s", matrix.workloads[run->spec.workload],
                          matrix.variants[run->spec.variant].name,
                          TrapMechanismName(matrix.traps[run->spec.trap]));
    if (!run->ok()) {
      absl::StrAppendFormat(&line, ": FAILED (%s)", run->outcome);
    } else if (!run->phases.empty()) {
      const PhaseSample& p = run->phases.back();
      absl::StrAppendFormat(&line, ": %s %s", p.name,
                            p.wall_ns ? FormatNs(p.ops ? double(*p.wall_ns) / double(p.ops) : 0) + "/op"
                                      : "time not measured");
      if (p.kernel_insns && p.ops) {
        absl::StrAppendFormat(&line, ", %.0f kernel insns/op", double(*p.kernel_insns) / double(p.ops));
      }
    }
  }
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s", line.c_str());
    line_open_ = true;
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void ProgressPrinter::Finish() {
  if (line_open_) {
    std::fprintf(out_, "\n");
    std::fflush(out_);
    line_open_ = false;
  }
}

}  // namespace sigvisor::bench
