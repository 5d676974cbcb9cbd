#!/usr/bin/env bash
# What N concurrent restores of one snapshot cost in host memory (issue 28): each
# restored VM reports its guest RAM at its end (`run --json`'s guest_memory: resident,
# its own written pages, and the pages it read from the snapshot's memory image,
# which the page cache holds once for all of them), and the script samples the host's
# MemAvailable while they run. The restores map DIR/memory MAP_PRIVATE, so N VMs
# should cost the image's pages once plus each VM's written pages, not N images.
#
# Usage: perf/restore_fanout.sh SIGVISOR DIR [N] [RUN ARGS...]
#   SIGVISOR  the sigvisor binary (e.g. bazel-bin/vmm/app/cli/sigvisor)
#   DIR       a snapshot (sigvisor snapshot --out DIR, of the bundled kernel or Linux)
#   N         concurrent restores, default 8
#   RUN ARGS  the orders of each, default --workload lat_sig --ops 64
# Runs in the hardware lane too (busybox's tools and bash), e.g.
#   tests/hwkvm/lane.sh --file perf/restore_fanout.sh \
#     --sh '/lane/files/restore_fanout.sh /lane/sigvisor /tmp/linux.snap 8'
# Prints one line per restore and the totals. Nothing here is a test: the figures
# depend on the host (what is already in its page cache, what else runs).
set -uo pipefail

if (($# < 2)); then
  sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
fi
sigvisor=$1 dir=$2 n=${3:-8}
shift $(($# < 3 ? $# : 3))
orders=("$@")
((${#orders[@]} > 0)) || orders=(--workload lat_sig --ops 64)
[[ -f $dir/state && -f $dir/memory ]] || { echo "restore_fanout: $dir holds no snapshot" >&2; exit 2; }

available_kib() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }
field() { grep -o "\"$1\": [0-9]*" "$2" | head -1 | grep -o '[0-9]*$'; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
sync
before=$(available_kib)
lowest=$before
pids=()
for ((i = 1; i <= n; i++)); do
  "$sigvisor" run --json --quiet --restore "$dir" "${orders[@]}" >"$out/$i.json" 2>"$out/$i.err" &
  pids+=($!)
done
# Every 100 ms while any restore runs: MemAvailable, whose lowest is what all of them
# (and their page cache) held at once, and each process's peak RSS so far (VmHWM: the
# whole sigvisor process, its guest RAM's resident pages among the rest).
declare -A peak
while kill -0 "${pids[@]}" 2>/dev/null; do
  now=$(available_kib)
  ((now < lowest)) && lowest=$now
  for pid in "${pids[@]}"; do
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    [[ -n $hwm ]] && peak[$pid]=$hwm
  done
  sleep 0.1
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done

echo "restore_fanout: $n restores of $dir at once (${orders[*]})"
printf '  %-4s %-10s %14s %14s %14s %18s\n' run outcome "resident KiB" "written KiB" "read KiB" \
  "process peak KiB"
sum_resident=0 sum_private=0 max_shared=0 mapped=0
for ((i = 1; i <= n; i++)); do
  f=$out/$i.json
  outcome=$(grep -o '"outcome": "[a-z_]*"' "$f" | head -1 | cut -d'"' -f4)
  resident=$(field resident_bytes "$f") private=$(field private_bytes "$f")
  shared=$(field shared_bytes "$f") mapped=$(field mapped_bytes "$f")
  if [[ -z $resident ]]; then
    printf '  %-4s %-10s (no guest_memory: %s)\n' "$i" "${outcome:-failed}" "$(head -c 200 "$out/$i.err")"
    continue
  fi
  printf '  %-4s %-10s %14d %14d %14d %18s\n' "$i" "$outcome" $((resident / 1024)) \
    $((private / 1024)) $((shared / 1024)) "${peak[${pids[i - 1]}]:--}"
  sum_resident=$((sum_resident + resident)) sum_private=$((sum_private + private))
  ((shared > max_shared)) && max_shared=$shared
done
echo "  guest RAM per VM: $((${mapped:-0} >> 20)) MiB; snapshot memory image: $(($(du -k "$dir/memory" | cut -f1))) KiB on disk"
echo "  if nothing were shared: $((sum_resident / 1024)) KiB (the VMs' resident pages, summed)"
echo "  shared, as mapped:      $(((max_shared + sum_private) / 1024)) KiB: every VM's written pages ($((sum_private / 1024)) KiB) and the image's pages the page cache holds once for all (at least the most one VM read; VMs given the same orders read the same pages)"
echo "  host MemAvailable:      $((before - lowest)) KiB lower at its lowest while they ran (everything: the processes, their guests' pages, the page cache)"
((failed == 0)) || echo "  $failed restore(s) exited with a non-zero status"
