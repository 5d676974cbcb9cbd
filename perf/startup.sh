#!/usr/bin/env bash
# Start-up cost of one whole `sigvisor run` process (issue 17 goal 3): the median wall
# time of N runs of `sigvisor run --workload hello --quiet`, the median "VM create"
# those runs report (--json's timing.vm_create_ns), and what the dynamic loader does
# before main (shared libraries loaded, its own time from LD_DEBUG=statistics).
#
# Usage: perf/startup.sh [BINARY] [RUNS]     (from anywhere in the repo)
#   BINARY  default bazel-bin/vmm/app/cli/sigvisor (build it first, -c opt as .bazelrc
#           sets); RUNS default 30.
# Times are noisy on a shared machine: the script prints the load average with them,
# and medians only. Nothing here is a test.
#
# On this project's PVM host (2 cores, load average ~1.9, 30 runs each, the two
# binaries run alternately twice; the guest's own run is ~9.6 ms of each):
#                               before     after
#   whole process, median       23.1 ms    18.1 ms
#   VM create, median           0.78 ms    0.42 ms  supported CPUID read once, at open
#   shared libraries (ldd)      55         6        Abseil, Capstone, seccomp static
#   `--version` CPU time        4.2 ms     1.7 ms   (0.87 ms as a non-PIE, which sigvisor
#                                                    is not: see vmm/app/cli/BUILD.bazel)
# and no throwaway VM for the TSC rate (~1 ms of CPU per run).
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-bazel-bin/vmm/app/cli/sigvisor}
runs=${2:-30}
[[ -x $binary ]] || { echo "startup.sh: no $binary (bazel build //vmm/app/cli:sigvisor)" >&2; exit 2; }

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

"$binary" run --workload hello --quiet >/dev/null  # warm the page cache
wall=() create=()
for ((i = 0; i < runs; i++)); do
  start=$(date +%s%N)
  "$binary" run --workload hello --quiet >/dev/null
  end=$(date +%s%N)
  wall+=("$(((end - start) / 1000))")
  create+=("$("$binary" run --workload hello --quiet --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["timing"]["vm_create_ns"])')")
done

printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'whole process (median of %d): %.2f ms\n' "$runs" \
  "$(printf '%s\n' "${wall[@]}" | median | awk '{print $1 / 1000}')"
printf 'VM create (median of %d): %.3f ms\n' "$runs" \
  "$(printf '%s\n' "${create[@]}" | median | awk '{print $1 / 1e6}')"
printf 'shared libraries (ldd): %d\n' "$(ldd "$binary" | wc -l)"
# CPU time, which the machine's load disturbs less than wall time.
if command -v perf >/dev/null; then
  for args in "run --workload hello --quiet" "--version"; do
    perf stat -r "$runs" -e task-clock,page-faults "$binary" $args 2>&1 >/dev/null |
      awk -v a="$args" '/task-clock|page-faults/ {printf "%s: %s %s (mean of '"$runs"')\n", a, $1, $2}'
  done
fi
# The loader's own count of what it loaded and its time to relocate, once.
LD_DEBUG=statistics "$binary" --version 2>&1 >/dev/null |
  grep -E 'total startup time|time needed for relocation|number of relocations:|relative relocations' |
  sed 's/^ *[0-9]*: *//'
