#!/usr/bin/env bash
# sigvisor's own kernel images boot under QEMU too (Multiboot header + 32-bit entry,
# console on COM1, exit through isa-debug-exit), and pass the same self-tests there:
# a cross-check of the guest kernel's semantics on a second x86 implementation (TCG).
set -euo pipefail

qemu=$(command -v qemu-system-x86_64 || true)
if [[ -z "$qemu" ]]; then
  echo "SKIP: qemu-system-x86_64 is not installed (tools/setup.sh installs it)"
  exit 0
fi

status=0
for image in "$@"; do
  log="${TEST_TMPDIR:-/tmp}/$(basename "$image").log"
  # isa-debug-exit: the guest's exit status 0 becomes QEMU's (0 << 1) | 1 = 1.
  set +e
  timeout 300 "$qemu" -kernel "$image" -append "kernel workload=selftest case=all" \
    -display none -serial "file:$log" -monitor none -no-reboot -m 64 \
    -device isa-debug-exit,iobase=0xf4,iosize=4
  code=$?
  set -e
  passes=$(grep -c '^PASS ' "$log" || true)
  if [[ $code -ne 1 ]] || grep -q '^FAIL' "$log" || [[ $passes -lt 11 ]]; then
    echo "FAIL $(basename "$image"): QEMU exit $code, $passes self-tests passed"
    cat "$log"
    status=1
  else
    echo "PASS $(basename "$image"): $passes self-tests under QEMU"
  fi
done
exit $status
