#!/usr/bin/env bash
# Differential: each Multiboot test kernel under sigvisor against what QEMU (TCG) gave
# it with the same command line and module (recorded at build time by
# multiboot_qemu_reference.sh). QEMU's exit status must be the guest's status as
# sigvisor reports it (and sigvisor's own follows from it), and the consoles must be
# equal, except mem_upper: QEMU's firmware (SeaBIOS) keeps the top 128 KiB of RAM for
# itself and the Multiboot info reports that, while sigvisor has no firmware and
# reports all of RAM above 1 MiB. sigvisor runs them with --irqchip, as QEMU always has
# a LAPIC. A kernel named *smp* runs on 4 vCPUs (--vcpus 4; QEMU's -smp 4): its APs are
# started by INIT/SIPI.
#   multiboot_qemu_test.sh SIGVISOR MODULE [KERNEL QEMU_REFERENCE]...
set -euo pipefail

sigvisor=$1
module=$2
shift 2
if [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then
  echo "SKIP: /dev/kvm is not usable (sigvisor's half needs it)"
  exit 0
fi

tmp=${TEST_TMPDIR:-$(mktemp -d)}
# sigvisor's stderr is the guest's console, plus the line it adds for a guest status
# above 122 (`sigvisor help`, "exit status"): left out.
mask() { sed -E -e 's/mem_upper=[0-9]+/mem_upper=N/' -e '/^sigvisor: the guest exited with status /d'; }
status=0
while (($# >= 2)); do
  kernel=$1 reference=$2
  shift 2
  name=$(basename "$kernel")
  vcpus=(--vcpus 1)
  if [[ $name == *smp* ]]; then vcpus=(--vcpus 4); fi
  qemu_code=$(sed -n '1s/^exit //p' "$reference")
  tail -n +2 "$reference" >"$tmp/$name.qemu"
  set +e
  "$sigvisor" run --image "$kernel" --cmdline "a=1 b=2" --module "$module=$module x=y" \
    --memory 32 --timeout 60s --irqchip "${vcpus[@]}" --json >"$tmp/$name.json" \
    2>"$tmp/$name.sigvisor"
  sigvisor_code=$?
  set -e
  # The guest's status as sigvisor saw it (the JSON's exit_code) must be QEMU's exit
  # status, and sigvisor's own status follows from it: up to 122 passed through, 123
  # above (`sigvisor help`, "exit status").
  guest_code=$(grep -o '"exit_code": [0-9]*' "$tmp/$name.json" | grep -o '[0-9]*$' || true)
  want_code=$qemu_code
  (( qemu_code > 122 )) && want_code=123
  # (Files, not process substitution: the hardware lane's busybox has no /dev/fd.)
  mask <"$tmp/$name.qemu" >"$tmp/$name.qemu.masked"
  mask <"$tmp/$name.sigvisor" >"$tmp/$name.sigvisor.masked"
  if [[ "$guest_code" != "$qemu_code" || $sigvisor_code -ne $want_code ]]; then
    echo "FAIL $name: QEMU exit $qemu_code; sigvisor saw the guest exit ${guest_code:-?} and exited $sigvisor_code (want $want_code)"
    status=1
  elif ! diff "$tmp/$name.qemu.masked" "$tmp/$name.sigvisor.masked"; then
    echo "FAIL $name: the consoles differ (QEMU <, sigvisor >)"
    status=1
  else
    echo "PASS $name: exit $qemu_code and $(wc -l <"$tmp/$name.qemu") console lines alike"
  fi
done
exit $status
