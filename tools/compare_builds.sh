#!/usr/bin/env bash
# Are two builds of sigvisor's reports the same? Runs one set of commands with each
# build (OLD twice, NEW once) and compares their output byte for byte: stdout, stderr
# and the exit status. Whatever differs between OLD's two runs is the run's own noise
# (times, and counts that depend on them, such as timer ticks) and is left out of
# OLD against NEW; every other line must be the same. sigvisor's version and commit
# are masked. For a refactoring that must not change behaviour (docs/testing.md).
#
# Usage: tools/compare_builds.sh OLD NEW [SET]     (from anywhere; bash and busybox suffice,
#        so it runs in the hardware lane too: tests/hwkvm/lane.sh --file OLD
#        --file tools/compare_builds.sh --sh '/lane/files/compare_builds.sh
#        /lane/files/OLD /lane/sigvisor all')
#   SET  nokvm (default where /dev/kvm is absent): help, images, sites, refusals and
#        MIPS runs; all: those and the x86-64 runs, traces, a bench and a study
# Prints one line per command ("same", "same but for N noisy lines", "same in shape" where
# lines come and go between runs, or where it differs, with the start of the diff) and
# exits 1 if any command differs.
set -uo pipefail
old=${1:?usage: compare_builds.sh OLD NEW [nokvm|all]} new=${2:?usage: compare_builds.sh OLD NEW [nokvm|all]}
old=$(readlink -f "$old") new=$(readlink -f "$new")  # the commands run in a scratch directory
set_name=${3:-$([[ -e /dev/kvm ]] && echo all || echo nokvm)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

commands=(
  "help" "help run" "help bench" "help trace" "help study" "help image" "--version"
  "images" "images --json" "sites" "sites --json" "sites --uaccess --variant uaccess=cerr"
  "run --workload nope" "run --ops abc" "run --trap=bogus" "run --variant dr7=lazy,dr7=always"
  "run --inject sig=usr1,op=x" "run --memory 3" "run --vcpus 99" "run --image /nonexistent"
  "bench --traps bogus" "bench --workloads nope" "merge /nonexistent.json"
  "run --arch mips --workload hello"
  "run --arch mips --workload lat_sig --ops 5 --json"
  "run --arch mips --variant tramp=vdso --cores 4 --workload lat_sig --ops 5"
)
if [[ $set_name == all ]]; then
  commands+=(
    "run --workload hello" "run --workload hello --json"
    "run --workload divzero --ops 10 --trap=patch"
    "run --workload divzero --ops 10 --trap=pv --json"
    "run --workload divzero --ops 10 --trap=hw-gd"
    "run --workload lat_sig --ops 5 --variant accelerated --json"
    "run --workload lat_sig --inject sig=usr1,op=3,phase=sig_hndl --json"
    "trace --workload divzero --ops 1 --stages"
    "trace --workload divzero --ops 1 --json"
    "bench --workloads divzero --variants baseline,accelerated --traps off,pv --repetitions 1 --ops 5"
    "bench --workloads divzero --repetitions 1 --ops 5 --json"
    "study dr7 --runs 1 --ops 5"
  )
fi

# Version, commit and the temporary directory's name are the builds', not the runs'.
mask() {
  sed -E -e 's/("commit": )"[0-9a-f]*"/\1"C"/' -e 's/("version": )"[^"]*"/\1"V"/' \
    -e 's/("tree_modified": )(true|false)/\1B/' -e 's/sigvisor [0-9]+\.[0-9]+\.[0-9]+[^ ]*( \([^)]*\))?/sigvisor V/' \
    -e "s#$work#W#g"
}

run() {  # run BINARY ARGS OUT
  local binary=$1 args=$2 out=$3
  (cd "$work" && eval "\"$binary\" $args") >"$out.out" 2>"$out.err" </dev/null
  echo "status $?" >>"$out.err"
  cat "$out.out" "$out.err" | mask >"$out"
}

status=0 i=0
for args in "${commands[@]}"; do
  i=$((i + 1))
  run "$old" "$args" "$work/$i.a"
  run "$old" "$args" "$work/$i.b"
  run "$new" "$args" "$work/$i.new"
  # Lines where OLD's two runs agree must be NEW's too; the rest is noise.
  verdict=$(awk -v A="$work/$i.a" -v B="$work/$i.b" -v N="$work/$i.new" '
    BEGIN {
      while ((getline l < A) > 0) a[++na] = l
      while ((getline l < B) > 0) b[++nb] = l
      while ((getline l < N) > 0) n[++nn] = l
      if (na == nb && nn == na) {
        for (k = 1; k <= na; k++) {
          if (a[k] != b[k]) { noisy++; continue }
          if (n[k] != a[k]) { print "differs at line " k ": OLD [" a[k] "] NEW [" n[k] "]"; exit }
        }
        print noisy ? "same but for " noisy " noisy lines" : "same"
        exit
      }
      # Lines come and go between runs (KVM statistics are listed when not zero): then
      # the numbers are masked and the lines compared as sets. Every line NEW gives must
      # be one OLD gave in either run, and every line both OLD runs gave must be in NEW.
      for (k = 1; k <= na; k++) { inA[shape(a[k])] = 1 }
      for (k = 1; k <= nb; k++) { inB[shape(b[k])] = 1 }
      for (k = 1; k <= nn; k++) { inN[shape(n[k])] = 1 }
      for (l in inN) if (!(l in inA) && !(l in inB)) { print "differs: NEW has [" l "]"; exit }
      for (l in inA) if ((l in inB) && !(l in inN)) { print "differs: NEW lacks [" l "]"; exit }
      print "same in shape (lines vary from run to run; numbers masked)"
    }
    function shape(line) { gsub(/[0-9]+(\.[0-9]+)?/, "N", line); return line }')
  printf '%-100s %s\n' "sigvisor $args:" "$verdict"
  if [[ $verdict != same* ]]; then
    status=1
    diff "$work/$i.a" "$work/$i.new" | head -n 12 | sed 's/^/    /'
  fi
done
exit $status
