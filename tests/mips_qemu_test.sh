#!/usr/bin/env bash
# The MIPS guest images under QEMU Malta (the reference implementation of the
# platform: docs/mips-platform.md): each must pass the signal-semantics self-tests
# (workload=selftest case=all) and the workloads must run. With --sigvisor=PATH the
# same runs go through sigvisor's MIPS interpreter too, and the console output of both
# must match, timing lines excluded (a differential test of the interpreter). Under
# QEMU the kernel maps its own vdso page, under sigvisor the VMM's (docs/mips-platform.md,
# "The vdso page"): the self-tests' vdso case and the tramp=vdso workloads run on both.
#
#   mips_qemu_test.sh [--sigvisor=PATH] IMAGE...
#
# Skipped, with a message, when qemu-system-mipsel is not installed.
set -euo pipefail

sigvisor=""
images=()
for arg in "$@"; do
  case "$arg" in
    --sigvisor=*) sigvisor=${arg#--sigvisor=} ;;
    *) images+=("$arg") ;;
  esac
done

qemu=$(command -v qemu-system-mipsel || true)
if [[ -z "$qemu" ]]; then
  echo "SKIP: qemu-system-mipsel is not installed (tools/setup.sh installs qemu-system-mips)"
  exit 0
fi

tmp="${TEST_TMPDIR:-$(mktemp -d)}"
# The runs: the self-tests and each workload (few ops: this checks behaviour, not time).
runs=("workload=selftest case=all" "workload=summary ops=20" "workload=hello ops=5"
      "workload=fault")

# Console output as both implementations print it, minus what may differ: timing
# lines (cycle counts), carriage returns (QEMU's serial), the status line the kernel
# prints under QEMU only (SOFTRES cannot carry an exit status), and the line sigvisor
# adds on stderr for a guest status above 122.
normalise() {
  tr -d '\r' < "$1" | grep -v -e 'cycles per' -e '^sigvisor: exit status ' \
    -e '^sigvisor: the guest exited with status ' || true
}

run_qemu() { # image args log
  timeout 120 "$qemu" -M malta -cpu 74Kf -m 64 -kernel "$1" -append "$2" \
    -display none -serial "file:$3" -monitor none -no-reboot
}

status=0
for image in "${images[@]}"; do
  name=$(basename "$image")
  for args in "${runs[@]}"; do
    tag="$name.$(echo "$args" | tr ' =' '__')"
    log="$tmp/$tag.qemu.log"
    set +e
    run_qemu "$image" "$args" "$log"
    code=$?
    set -e
    exit_line=$(tr -d '\r' < "$log" | grep '^sigvisor: exit status ' || true)
    guest_status=${exit_line##* }
    want=0
    [[ "$args" == workload=fault ]] && want=136 # 128 + SIGFPE
    ok=1
    [[ $code -eq 0 && "$guest_status" == "$want" ]] || ok=0
    if [[ "$args" == workload=selftest* ]]; then
      passes=$(grep -c '^PASS ' "$log" || true)
      # 11 cases on both arches + the MIPS vdso case
      if grep -q '^FAIL' "$log" || [[ $passes -lt 12 ]]; then ok=0; fi
    fi
    if [[ $ok -eq 0 ]]; then
      echo "FAIL $name '$args': QEMU exit $code, guest status '${guest_status}' (want $want)"
      cat "$log"
      status=1
      continue
    fi
    echo "PASS $name '$args' under QEMU"

    if [[ -n "$sigvisor" ]]; then
      # The interpreter (arch/mips/vmm) through the CLI. With --json the report goes
      # to stdout and the guest's console, alone, to stderr. The JSON's exit_code is
      # the guest's status; sigvisor's own exit status passes it through up to 122 and
      # is 123 above (`sigvisor help`, "exit status"): 136 would read as sigvisor
      # itself killed by SIGFPE.
      out="$tmp/$tag.sigvisor.log"
      set +e
      "$sigvisor" run --arch mips --json --image "$image" --cmdline "$args" \
        > "$tmp/$tag.sigvisor.json" 2> "$out"
      code=$?
      set -e
      want_sigvisor=$want
      (( want > 122 )) && want_sigvisor=123
      json_code=$(grep -o '"exit_code": [0-9]*' "$tmp/$tag.sigvisor.json" | grep -o '[0-9]*$' || true)
      if [[ $code -ne $want_sigvisor || "$json_code" != "$want" ]]; then
        echo "FAIL $name '$args': sigvisor exit $code (want $want_sigvisor), guest status '$json_code' (want $want)"
        cat "$out"
        status=1
      elif ! diff -u <(normalise "$log") <(normalise "$out") > "$tmp/$tag.diff"; then
        echo "FAIL $name '$args': console output differs between QEMU and sigvisor"
        cat "$tmp/$tag.diff"
        status=1
      else
        echo "PASS $name '$args': same console output under sigvisor"
      fi
    fi
  done
done
if [[ -z "$sigvisor" ]]; then
  echo "NOTE: no --sigvisor given: QEMU runs only (the differential half is off)"
fi
exit $status
