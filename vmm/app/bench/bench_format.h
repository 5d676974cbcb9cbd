// A bench result as text (one table per workload phase), CSV (one row per cell) and
// an SVG chart (one panel per workload phase and trap mechanism).
#ifndef SIGVISOR_VMM_APP_BENCH_BENCH_FORMAT_H_
#define SIGVISOR_VMM_APP_BENCH_BENCH_FORMAT_H_

#include <string>
#include <string_view>
#include <vector>

#include "vmm/app/bench/results.h"
#include "vmm/report/svg_chart.h"

namespace sigvisor::bench {

std::string FormatBenchText(const BenchResult& result);
std::string FormatBenchCsv(const BenchResult& result);
std::string FormatBenchSvg(const BenchResult& result);

// "4 workloads x 2 variants x 2 trap mechanisms x 5 repetitions = 80 runs of 100 ops"
std::string DescribeMatrix(const Matrix& matrix);

// The first line of a result's status: "complete: 80 of 80 runs measured" or
// "INCOMPLETE: 12 of 80 runs measured, 1 failed (interrupted)".
std::string CompletenessLine(const BenchResult& result);

// "1.234 ms" / "703.6 us" / "950 ns" for a time in nanoseconds.
std::string FormatNs(double ns);

// A cell of a variant of several vCPUs, on one line: "per op, by vCPU: vCPU 0 1 exits,
// 1 IPIs, 1 interrupts; vCPU 1 ..." (exits: the VMM's; IPIs: the guest's own count, where
// it keeps one; interrupts: KVM's irq_injections).
std::string FormatVcpusLine(const Cell& cell);

// What a cell's time leaves out, one line each: runs whose time is not measured
// (below the marker calibration's noise), runs whose clocks disagree. Empty when
// every run's time is measured and its clocks agree.
std::vector<std::string> TimeNotes(const Cell& cell);

// A cell's bar in a chart of time per op: its median with a min-max whisker, the
// ratio to `reference` (the first bar's times; the cell's own for the first bar) on
// it, and beside it the time, `counts` (", 845 kernel insns") and what the time
// leaves out. A cell without a measured time gets no bar, and says why.
ChartBar TimeBar(std::string label, const Cell& cell, const Summary* reference,
                 std::string_view counts);

}  // namespace sigvisor::bench

#endif  // SIGVISOR_VMM_APP_BENCH_BENCH_FORMAT_H_
