#!/bin/bash
# Runs the Linux guest's /init on the host, where it is a Linux x86-64 program too:
# each workload with a few ops and samples, and the signal self-test, in the mode that prints the
# markers (SIGVISOR_MARKER=none: it never asks for the port), and checks the output
# and the exit status whole. The signal code is exercised for real by the host kernel.
set -u
init="$1"
failed=0

# expect STATUS WORKLOAD [VAR=VALUE...] <<< EXPECTED_OUTPUT
expect() {
  local want_status="$1" workload="$2"
  shift 2
  local want got status
  want="$(cat)"
  got="$(env -i SIGVISOR_MARKER=none sigvisor_workload="$workload" "$@" "$init" 2>&1)"
  status=$?
  if [[ "$got" != "$want" || "$status" != "$want_status" ]]; then
    echo "FAIL: workload $workload $*: status $status (want $want_status), output:"
    diff <(echo "$want") <(echo "$got")
    failed=1
  else
    echo "ok: workload $workload $*"
  fi
}

expect 0 divzero sigvisor_ops=7 sigvisor_repeats=1 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload divzero, 7 ops, 1 samples, 1 warm-up
marker: 5 calibrations
marker: phase divzero sample 1 begins, 7 ops
marker: phase ends
divzero: 1 x 7 ops, the handler ran 7 times
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 lat_sig sigvisor_ops=5 sigvisor_repeats=1 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload lat_sig, 5 ops, 1 samples, 1 warm-up
marker: 5 calibrations
marker: phase sig_inst sample 1 begins, 5 ops
marker: phase ends
lat_sig sig_inst: 1 x 5 ops, the handler ran 0 times
marker: 5 calibrations
marker: phase sig_hndl sample 1 begins, 5 ops
marker: phase ends
lat_sig sig_hndl: 1 x 5 ops, the handler ran 5 times
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 sigpingpong sigvisor_ops=50 sigvisor_repeats=1 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload sigpingpong, 50 ops, 1 samples, 1 warm-up
marker: 5 calibrations
marker: phase sigpingpong sample 1 begins, 50 ops
marker: phase ends
sigpingpong: 1 x 50 ops, the handler ran 50 times
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 pipe_rw sigvisor_ops=3 sigvisor_repeats=1 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload pipe_rw, 3 ops, 1 samples, 1 warm-up
marker: 5 calibrations
marker: phase pipe_rw sample 1 begins, 3 ops
marker: phase ends
pipe_rw: 1 x 3 ops, 3 bytes through the pipe
sigvisor init: exit status 0
marker: exit 0
OUT

# Samples: the phase made 3 times under one name, calibrated once before the first.
expect 0 divzero sigvisor_ops=7 sigvisor_repeats=3 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload divzero, 7 ops, 3 samples, 1 warm-up
marker: 5 calibrations
marker: phase divzero sample 1 begins, 7 ops
marker: phase ends
marker: phase divzero sample 2 begins, 7 ops
marker: phase ends
marker: phase divzero sample 3 begins, 7 ops
marker: phase ends
divzero: 3 x 7 ops, the handler ran 21 times
sigvisor init: exit status 0
marker: exit 0
OUT

# More warm-up rounds: the child answers each, and the phase still counts only its
# own (the child exits 0 only if it saw every round, warm-up and measured).
expect 0 sigpingpong sigvisor_ops=4 sigvisor_repeats=1 sigvisor_warmup=3 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload sigpingpong, 4 ops, 1 samples, 3 warm-up
marker: 5 calibrations
marker: phase sigpingpong sample 1 begins, 4 ops
marker: phase ends
sigpingpong: 1 x 4 ops, the handler ran 4 times
sigvisor init: exit status 0
marker: exit 0
OUT

# sigvisor_warmup=0 counts as 1: the first op's first-touch path stays unmeasured.
expect 0 pipe_rw sigvisor_ops=3 sigvisor_repeats=1 sigvisor_warmup=0 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload pipe_rw, 3 ops, 1 samples, 1 warm-up
marker: 5 calibrations
marker: phase pipe_rw sample 1 begins, 3 ops
marker: phase ends
pipe_rw: 1 x 3 ops, 3 bytes through the pipe
sigvisor init: exit status 0
marker: exit 0
OUT

# sigvisor_repeats=0 counts as 1: a phase is always measured.
expect 0 sigpingpong sigvisor_ops=4 sigvisor_repeats=0 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload sigpingpong, 4 ops, 1 samples, 1 warm-up
marker: 5 calibrations
marker: phase sigpingpong sample 1 begins, 4 ops
marker: phase ends
sigpingpong: 1 x 4 ops, the handler ran 4 times
sigvisor init: exit status 0
marker: exit 0
OUT

# Across CPUs: the parent pinned to CPU 0, the child to CPU 1 (sched_setaffinity), on a
# host where both can be had (taskset asks the same); elsewhere each refuses in one line.
xcpu_ok=""
if command -v taskset >/dev/null; then
  xcpu_ok=no
  taskset -c 0 true 2>/dev/null && taskset -c 1 true 2>/dev/null && xcpu_ok=yes
fi
for workload in xcpu_pingpong xcpu_kick xcpu_wake; do
  ran="$(cat <<OUT
sigvisor init: no marker port, markers printed
sigvisor init: workload $workload, 4 ops, 2 samples, 2 warm-up
marker: 5 calibrations
marker: phase $workload sample 1 begins, 4 ops
marker: phase ends
marker: phase $workload sample 2 begins, 4 ops
marker: phase ends
$workload: 2 x 4 ops, the handler ran 8 times
sigvisor init: exit status 0
marker: exit 0
OUT
)"
  refused="$(cat <<OUT
sigvisor init: no marker port, markers printed
sigvisor init: workload $workload, 4 ops, 2 samples, 2 warm-up
$workload: needs --vcpus 2 or more
sigvisor init: exit status 1
marker: exit 1
OUT
)"
  run=(sigvisor_ops=4 sigvisor_repeats=2 sigvisor_warmup=2)
  if [[ $xcpu_ok == yes ]]; then
    expect 0 "$workload" "${run[@]}" <<<"$ran"
  elif [[ $xcpu_ok == no ]]; then
    expect 1 "$workload" "${run[@]}" <<<"$refused"
  else # no taskset to ask: either, whole
    got="$(env -i SIGVISOR_MARKER=none sigvisor_workload="$workload" "${run[@]}" "$init" 2>&1)"
    status=$?
    if [[ ($status == 0 && $got == "$ran") || ($status == 1 && $got == "$refused") ]]; then
      echo "ok: workload $workload (status $status)"
    else
      echo "FAIL: workload $workload: status $status, output:"
      echo "$got"
      failed=1
    fi
  fi
done

expect 0 selftest <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload selftest, 16 ops, 5 samples, 1 warm-up
PASS siginfo
PASS registers
PASS blocked
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 selftest sigvisor_case=blocked <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload selftest, 16 ops, 5 samples, 1 warm-up
PASS blocked
sigvisor init: exit status 0
marker: exit 0
OUT

# The default: every workload, each phase 5 samples (here of 2 ops).
expect 0 summary sigvisor_ops=2 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload summary, 2 ops, 5 samples, 1 warm-up
marker: 5 calibrations
marker: phase divzero sample 1 begins, 2 ops
marker: phase ends
marker: phase divzero sample 2 begins, 2 ops
marker: phase ends
marker: phase divzero sample 3 begins, 2 ops
marker: phase ends
marker: phase divzero sample 4 begins, 2 ops
marker: phase ends
marker: phase divzero sample 5 begins, 2 ops
marker: phase ends
divzero: 5 x 2 ops, the handler ran 10 times
marker: 5 calibrations
marker: phase sig_inst sample 1 begins, 2 ops
marker: phase ends
marker: phase sig_inst sample 2 begins, 2 ops
marker: phase ends
marker: phase sig_inst sample 3 begins, 2 ops
marker: phase ends
marker: phase sig_inst sample 4 begins, 2 ops
marker: phase ends
marker: phase sig_inst sample 5 begins, 2 ops
marker: phase ends
lat_sig sig_inst: 5 x 2 ops, the handler ran 0 times
marker: 5 calibrations
marker: phase sig_hndl sample 1 begins, 2 ops
marker: phase ends
marker: phase sig_hndl sample 2 begins, 2 ops
marker: phase ends
marker: phase sig_hndl sample 3 begins, 2 ops
marker: phase ends
marker: phase sig_hndl sample 4 begins, 2 ops
marker: phase ends
marker: phase sig_hndl sample 5 begins, 2 ops
marker: phase ends
lat_sig sig_hndl: 5 x 2 ops, the handler ran 10 times
marker: 5 calibrations
marker: phase sigpingpong sample 1 begins, 2 ops
marker: phase ends
marker: phase sigpingpong sample 2 begins, 2 ops
marker: phase ends
marker: phase sigpingpong sample 3 begins, 2 ops
marker: phase ends
marker: phase sigpingpong sample 4 begins, 2 ops
marker: phase ends
marker: phase sigpingpong sample 5 begins, 2 ops
marker: phase ends
sigpingpong: 5 x 2 ops, the handler ran 10 times
marker: 5 calibrations
marker: phase pipe_rw sample 1 begins, 2 ops
marker: phase ends
marker: phase pipe_rw sample 2 begins, 2 ops
marker: phase ends
marker: phase pipe_rw sample 3 begins, 2 ops
marker: phase ends
marker: phase pipe_rw sample 4 begins, 2 ops
marker: phase ends
marker: phase pipe_rw sample 5 begins, 2 ops
marker: phase ends
pipe_rw: 5 x 2 ops, 10 bytes through the pipe
sigvisor init: exit status 0
marker: exit 0
OUT

expect 127 nosuch <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload nosuch, 16 ops, 5 samples, 1 warm-up
sigvisor init: unknown workload 'nosuch' (known: summary all divzero lat_sig sigpingpong pipe_rw xcpu_pingpong xcpu_kick xcpu_wake selftest)
sigvisor init: exit status 127
marker: exit 127
OUT

expect 1 selftest sigvisor_case=nosuch <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload selftest, 16 ops, 5 samples, 1 warm-up
selftest: unknown case 'nosuch' (known: all siginfo registers blocked)
sigvisor init: exit status 1
marker: exit 1
OUT

exit $failed
