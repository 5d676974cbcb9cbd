#!/usr/bin/env bash
# Differential: each Multiboot test kernel boots under QEMU (TCG) and under sigvisor
# with the same command line and module; QEMU's exit status must be the guest's status
# as sigvisor reports it (and sigvisor's own follow from it), and the consoles must be
# equal, except mem_upper: QEMU's firmware (SeaBIOS) keeps the top 128 KiB of
# RAM for itself and the Multiboot info reports that, while sigvisor has no firmware
# and reports all of RAM above 1 MiB. sigvisor runs them with --irqchip, as QEMU
# always has a LAPIC. A kernel named *smp* runs on 4 CPUs under both (-smp 4,
# --vcpus 4): its APs are started by INIT/SIPI.
set -euo pipefail

sigvisor=$1
module=$2
shift 2
qemu=$(command -v qemu-system-x86_64 || true)
if [[ -z "$qemu" && -n "${SIGVISOR_TEST_LANE:-}" ]]; then
  echo "SKIP: the $SIGVISOR_TEST_LANE lane's image carries no QEMU to compare with" \
       "(sigvisor's half: multiboot_test)"
  exit 0
elif [[ -z "$qemu" ]]; then
  echo "SKIP: qemu-system-x86_64 is not installed (tools/setup.sh installs it)"
  exit 0
fi
if [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then
  echo "SKIP: /dev/kvm is not usable"
  exit 0
fi

tmp=${TEST_TMPDIR:-$(mktemp -d)}
# sigvisor's stderr is the guest's console, plus the line it adds for a guest status
# above 122 (`sigvisor help`, "exit status"): left out.
mask() { sed -E -e 's/mem_upper=[0-9]+/mem_upper=N/' -e '/^sigvisor: the guest exited with status /d'; }
status=0
for kernel in "$@"; do
  name=$(basename "$kernel")
  smp=(-smp 1)
  vcpus=(--vcpus 1)
  if [[ $name == *smp* ]]; then smp=(-smp 4); vcpus=(--vcpus 4); fi
  set +e
  timeout 120 "$qemu" -accel tcg "${smp[@]}" -kernel "$kernel" -append "a=1 b=2" \
    -initrd "$module x=y" -m 32 -display none -monitor none -no-reboot \
    -serial "file:$tmp/$name.qemu" -device isa-debug-exit,iobase=0xf4,iosize=4
  qemu_code=$?
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
  if [[ "$guest_code" != "$qemu_code" || $sigvisor_code -ne $want_code ]]; then
    echo "FAIL $name: QEMU exit $qemu_code; sigvisor saw the guest exit ${guest_code:-?} and exited $sigvisor_code (want $want_code)"
    status=1
  elif ! diff <(mask <"$tmp/$name.qemu") <(mask <"$tmp/$name.sigvisor"); then
    echo "FAIL $name: the consoles differ (QEMU <, sigvisor >)"
    status=1
  else
    echo "PASS $name: exit $qemu_code and $(wc -l <"$tmp/$name.qemu") console lines alike"
  fi
done
exit $status
