// Progress of a long bench or study on stderr, and Ctrl-C that stops it cleanly.
//
// Progress lines start once a command has run for `quiet_for` (2 s by default:
// short runs print nothing) and come at most once a second: runs done of all,
// elapsed time, an estimate of what is left, and the run just finished. On a
// terminal the line is rewritten in place.
#ifndef SIGVISOR_VMM_APP_BENCH_PROGRESS_H_
#define SIGVISOR_VMM_APP_BENCH_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "vmm/app/bench/runner.h"

namespace sigvisor::bench {

class ProgressPrinter {
 public:
  // `total_runs`: every run the command will make (over all its matrices).
  ProgressPrinter(size_t total_runs, FILE* out = stderr, uint64_t quiet_for_ns = 2'000'000'000);
  ~ProgressPrinter();

  // A callback for RunnerOptions::on_progress for one matrix; `label` prefixes the
  // lines ("study dr7").
  std::function<void(const Progress&)> Callback(const Matrix& matrix, std::string label);

  // Ends an in-place line.
  void Finish();

 private:
  void Report(const Matrix& matrix, const std::string& label, const Progress& progress);

  size_t total_;
  size_t done_before_ = 0;   // runs of earlier matrices
  size_t matrix_total_ = 0;  // runs of the current matrix's slice, once known
  FILE* out_;
  uint64_t start_ns_;
  uint64_t quiet_for_ns_;
  uint64_t last_print_ns_ = 0;
  bool tty_;
  bool line_open_ = false;
};

// Ctrl-C (SIGINT) and SIGTERM: the first asks the runs to stop after the current
// one (InterruptRequested() becomes true) and prints one line saying so; a second
// one ends the process as usual.
void InstallInterruptHandler();
bool InterruptRequested();

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_PROGRESS_H_
