#!/usr/bin/env bash
# Builds the libFuzzer targets (--config=fuzz: clang, -fsanitize=fuzzer,address) and
# runs each for a bounded time on a scratch copy of its checked-in seed corpus, one
# target per core at a time (FUZZ_JOBS sets how many).
# A crash, leak or timeout fails the run; the reproducer is kept under $FUZZ_OUT
# (default /tmp/sigvisor-fuzz) and its path and bytes are printed.
#   tests/fuzz/run_fuzzers.sh [seconds per target (default 45)] [target ...]
set -uo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-45}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(elf_fuzz session_fuzz bus_fuzz inject_spec_fuzz mips_interp_fuzz trace_analysis_fuzz bzimage_fuzz snapshot_fuzz kallsyms_fuzz pv_signal_fuzz); fi
out=${FUZZ_OUT:-/tmp/sigvisor-fuzz}
mkdir -p "$out"

labels=()
for t in "${targets[@]}"; do labels+=("//tests/fuzz:$t"); done
bazel build --config=fuzz "${labels[@]}" || exit 1
bin=$(bazel info --config=fuzz bazel-bin 2>/dev/null)

# fuzz_one TARGET: one target's run, its report lines on stdout. Each target has a
# single libFuzzer process (one core), so up to $jobs of them run side by side; each
# still runs for the whole $seconds.
fuzz_one() {
  local t=$1 work log rc runs artifact
  work=$(mktemp -d)
  cp tests/fuzz/corpus/"$t"/* "$work"/
  mkdir -p "$out/$t"
  log="$out/$t/log.txt"
  "$bin/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/$t/" -print_final_stats=1 "$work" >"$log" 2>&1
  rc=$?
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
  echo "fuzz: $t: $runs executions in ${seconds}s, exit $rc"
  if ((rc != 0)); then
    grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5
    for artifact in "$out/$t"/crash-* "$out/$t"/leak-* "$out/$t"/timeout-* "$out/$t"/oom-*; do
      [[ -e $artifact ]] || continue
      echo "fuzz: $t: reproducer $artifact ($(stat -c %s "$artifact") bytes):"
      od -A x -t x1z -v "$artifact" | head -64
      echo "fuzz: replay with: bazel build --config=fuzz //tests/fuzz:$t && $bin/tests/fuzz/$t $artifact"
    done
  fi
  rm -rf "$work"
  return "$rc"
}

# Up to $jobs targets at a time (FUZZ_JOBS, default one per core); each one's report
# is printed whole, in the order of the list, once it has ended.
jobs=${FUZZ_JOBS:-$(nproc)}
reports=$(mktemp -d)
for i in "${!targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
  { fuzz_one "${targets[$i]}" >"$reports/$i" 2>&1; echo $? >"$reports/$i.rc"; } &
done
wait
status=0
for i in "${!targets[@]}"; do
  cat "$reports/$i"
  [[ $(cat "$reports/$i.rc" 2>/dev/null) == 0 ]] || status=1
done
rm -rf "$reports"
exit "$status"
