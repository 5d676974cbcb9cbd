#!/usr/bin/env bash
# Start-up cost of one whole `sigvisor run` process (issue 17 goal 3): the median wall
# time of N runs of `sigvisor run --workload hello --quiet`, where that time goes by
# the runs' own --json (VM create, set-up, boot to the first hypercall, the guest's
# run, and the rest: the process's start and exit, opening KVM, the report), the
# guest kernel instructions of boot and of the whole run (exact, where the host counts
# them), and what the dynamic loader does before main.
#
# Usage: perf/startup.sh [BINARY] [RUNS] [OTHER_BINARY]    (from anywhere in the repo)
#   BINARY        default bazel-bin/vmm/app/cli/sigvisor (build it first, -c opt as
#                 .bazelrc sets); RUNS default 30.
#   OTHER_BINARY  another build (e.g. a copy of main's before a change): the two run
#                 alternately, so that both see the same load, and both are reported.
# Times are noisy on a shared machine: the script prints the load average with them,
# and medians only. Nothing here is a test.
#
# On this project's PVM host (2 cores), `sigvisor run --workload hello --quiet`, medians:
#                              session start   issue 17, round 2   round 3 (A/B, same load)
#   whole process              23.1 ms         18.1 ms (load 1.9)  22.2 -> 18.2, 24.6 -> 20.3,
#                                                                  26.7 -> 23.4 ms (load 2.2-3)
#   VM create                  0.78 ms         0.42 ms             0.54-0.72 -> 0.66-0.77 ms
#   boot, to the first hcall   -               3.2 ms              3.8-4.3 -> 1.7-1.9 ms
#   boot kernel instructions   1511            1511                1195
#   CPU time (perf stat)       -               -                   19.8 -> 16.6 ms (4 pairs)
#   shared libraries (ldd)     55              6                   6
# Round 2: Abseil, Capstone and seccomp static; the supported CPUID read once; the TSC
# rate from the run's own vCPU. Round 3: no second VM for the host kind (the KVM vendor
# module in /sys/module says it), and boot cut where CPL0 is emulated (IDT gates copied,
# page-table walks without calls, init's task slot not cleared twice). VM create went up
# a little because the run's VM is now the process's first (its memslot and vCPU cost
# ~0.1 ms more than a second VM's). What is left is mostly the guest's own run: ~7,100
# kernel instructions at about a microsecond each (boot 1,195; the phase's five
# calibrations ~2,600; 16 getpid ops at 135 each; init's console writes and exit),
# and ~2.6 ms of process start and exit beyond an empty program's (relocating 80,000
# pointers in Capstone's tables, 500 page faults).
# Round 4 (A/B, 30 pairs, load 0.8): Capstone's ten unused architectures left out of
# the link (third_party/system/capstone_x86_only.c): relative relocations 79,891 ->
# 4,491; --version 503 -> 147 page faults and 2.06 -> 1.13 ms of CPU; `run` 726 -> 380
# page faults; whole process 16.8 -> 15.8 ms, of which the start and exit around the
# command 4.5 -> 2.1 ms. The guest's run (9.6-10.5 ms for its 7,134 instructions) is
# now most of what remains; of the rest, about 0.5 ms of VM create and 0.4 ms of the
# teardown are KVM patching kernel text for a vCPU without an in-kernel LAPIC
# (docs/host-notes.md).
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-bazel-bin/vmm/app/cli/sigvisor}
runs=${2:-30}
other=${3:-}
binaries=("$binary")
[[ -n $other ]] && binaries+=("$other")
for b in "${binaries[@]}"; do
  [[ -x $b ]] || { echo "startup.sh: no $b (bazel build //vmm/app/cli:sigvisor)" >&2; exit 2; }
done

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# One run with --json: "vm_create setup boot guest_run wall boot_insns run_insns"
# (times in us; wall is the command's own, from its start to the report).
json_fields() {
  # awk, not a JSON library: the hardware lane (tests/hwkvm/lane.sh --sh) has busybox
  # and bash only. sigvisor indents its JSON by two per level, which names each value's
  # place: "wall_ns" at the top, the times in "timing", "insn_emulation" in
  # "timing"."boot_kvm_stats" and in the top-level "kvm_stats" ("-" where absent).
  awk '
    { text = $0; sub(/^ */, "", text); indent = length($0) - length(text)
      key = text; sub(/^"/, "", key); sub(/".*/, "", key)
      value = text; sub(/^"[^"]*": */, "", value); sub(/,$/, "", value) }
    indent == 2 { top = key }
    indent == 4 { inner = key }
    indent == 2 && key == "wall_ns" { f["wall"] = value }
    indent == 4 && top == "timing" && key ~ /^(vm_create|setup|boot|run)_ns$/ { f[key] = value }
    indent == 6 && top == "timing" && inner == "boot_kvm_stats" && key == "insn_emulation" {
      f["boot_insns"] = value }
    indent == 4 && top == "kvm_stats" && key == "insn_emulation" { f["run_insns"] = value }
    END {
      printf "%d %d %d %d %d %s %s\n", f["vm_create_ns"] / 1000, f["setup_ns"] / 1000,
        f["boot_ns"] / 1000, f["run_ns"] / 1000, f["wall"] / 1000,
        ("boot_insns" in f) ? f["boot_insns"] : "-", ("run_insns" in f) ? f["run_insns"] : "-"
    }'
}

# Each run is timed from outside (fork to exit) and reports its own parts in --json, so
# that the parts of one run add up to its whole: process start and exit (the whole
# less the command's own wall_ns), the command's own rest (opening KVM, reading the
# image, the report: wall_ns less the three below), VM create, set-up, and the guest's
# run (boot included).
# Medians are taken of each part over the runs, and of the VMM's own share (the whole
# less the guest's run), which the medians of the parts need not add up to.
declare -A rows
for b in "${binaries[@]}"; do "$b" run --workload hello --quiet >/dev/null; done  # page cache
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < runs; i++)); do
  for b in "${binaries[@]}"; do
    start=${EPOCHREALTIME/./}  # microseconds (bash's clock: busybox's date has no %N)
    json=$("$b" run --workload hello --quiet --json)
    end=${EPOCHREALTIME/./}
    rows[$b]+="$((end - start)) $(json_fields <<<"$json");"
  done
done
printf 'load average: %s before, %s after\n' "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)"

for b in "${binaries[@]}"; do
  printf '\n%s (median of %d; each run split by its own --json)\n' "$b" "$runs"
  # fields: 1 whole, 2 vm_create, 3 setup, 4 boot, 5 guest run, 6 command wall,
  # 7 boot insns, 8 run insns (times in us)
  column() { tr ';' '\n' <<<"${rows[$b]}" | grep . | awk "{print $1}" | median; }
  ms() { column "$1" | awk '{printf "%8.3f", $1 / 1000}'; }
  printf '  whole process                %s ms\n' "$(ms '$1')"
  printf '    process start and exit     %s ms (whole less the command)\n' "$(ms '$1 - $6')"
  printf '    the command'"'"'s own rest     %s ms (KVM opened, image read, report)\n' \
    "$(ms '$6 - $2 - $3 - $5')"
  printf '    VM create                  %s ms\n' "$(ms '$2')"
  printf '    set-up (image load, tables)%s ms\n' "$(ms '$3')"
  printf '    the guest run, boot incl.  %s ms (boot, to the first hypercall: %s ms)\n' \
    "$(ms '$5')" "$(ms '$4' | tr -d ' ')"
  printf '  the VMM'"'"'s own share           %s ms (whole less the guest run)\n' "$(ms '$1 - $5')"
  printf '  guest kernel instructions    boot %s, whole run %s\n' "$(column '$7')" "$(column '$8')"
  if command -v ldd >/dev/null; then
    printf '  shared libraries (ldd)       %d\n' "$(ldd "$b" | wc -l)"
  fi
  # CPU time, which the machine's load disturbs less than wall time.
  if command -v perf >/dev/null; then
    for args in "run --workload hello --quiet" "--version"; do
      perf stat -r "$runs" -e task-clock,page-faults "$b" $args 2>&1 >/dev/null |
        awk -v a="$args" '/task-clock|page-faults/ {printf "  %s: %s %s (mean of '"$runs"')\n", a, $1, $2}'
    done
  fi
  # The loader's own count of what it loaded and its time to relocate, once.
  LD_DEBUG=statistics "$b" --version 2>&1 >/dev/null |
    grep -E 'total startup time|time needed for relocation|number of relocations:|relative relocations' |
    sed 's/^ *[0-9]*:[[:space:]]*/  /'
done
