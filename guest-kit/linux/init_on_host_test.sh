#!/bin/bash
# Runs the Linux guest's /init on the host, where it is a Linux x86-64 program too:
# each workload with a few ops and the signal self-test, in the mode that prints the
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

expect 0 divzero sigvisor_ops=7 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload divzero, 7 ops
marker: phase divzero begins, 7 ops
marker: phase ends
divzero: 7 ops, the handler ran 7 times
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 lat_sig sigvisor_ops=5 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload lat_sig, 5 ops
marker: phase sig_inst begins, 5 ops
marker: phase ends
lat_sig sig_inst: 5 ops, the handler ran 0 times
marker: phase sig_hndl begins, 5 ops
marker: phase ends
lat_sig sig_hndl: 5 ops, the handler ran 5 times
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 sigpingpong sigvisor_ops=50 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload sigpingpong, 50 ops
marker: phase sigpingpong begins, 50 ops
marker: phase ends
sigpingpong: 50 ops, the handler ran 50 times
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 pipe_rw sigvisor_ops=3 <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload pipe_rw, 3 ops
marker: phase pipe_rw begins, 3 ops
marker: phase ends
pipe_rw: 3 ops, 3 bytes through the pipe
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 selftest <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload selftest, 16 ops
PASS siginfo
PASS registers
PASS blocked
sigvisor init: exit status 0
marker: exit 0
OUT

expect 0 selftest sigvisor_case=blocked <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload selftest, 16 ops
PASS blocked
sigvisor init: exit status 0
marker: exit 0
OUT

# The default: every workload, 16 ops each.
expect 0 summary <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload summary, 16 ops
marker: phase divzero begins, 16 ops
marker: phase ends
divzero: 16 ops, the handler ran 16 times
marker: phase sig_inst begins, 16 ops
marker: phase ends
lat_sig sig_inst: 16 ops, the handler ran 0 times
marker: phase sig_hndl begins, 16 ops
marker: phase ends
lat_sig sig_hndl: 16 ops, the handler ran 16 times
marker: phase sigpingpong begins, 16 ops
marker: phase ends
sigpingpong: 16 ops, the handler ran 16 times
marker: phase pipe_rw begins, 16 ops
marker: phase ends
pipe_rw: 16 ops, 16 bytes through the pipe
sigvisor init: exit status 0
marker: exit 0
OUT

expect 127 nosuch <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload nosuch, 16 ops
sigvisor init: unknown workload 'nosuch' (known: summary all divzero lat_sig sigpingpong pipe_rw selftest)
sigvisor init: exit status 127
marker: exit 127
OUT

expect 1 selftest sigvisor_case=nosuch <<'OUT'
sigvisor init: no marker port, markers printed
sigvisor init: workload selftest, 16 ops
selftest: unknown case 'nosuch' (known: all siginfo registers blocked)
sigvisor init: exit status 1
marker: exit 1
OUT

exit $failed
