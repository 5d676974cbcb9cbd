#!/usr/bin/env bash
# What QEMU gives one Multiboot test kernel, recorded at build time for
# tests/multiboot_qemu_test.sh, so that the comparison needs no QEMU where sigvisor
# runs (the hardware lane's image has none) and no KVM where QEMU runs: QEMU's TCG
# boots the kernel with the command line and module the test gives sigvisor, and OUT
# gets "exit N" (QEMU's exit status) and then the console.
#   multiboot_qemu_reference.sh OUT KERNEL KERNEL_AS MODULE
# KERNEL_AS is the path the test names the kernel by (it is part of the kernel's
# command line, which the kernels print), MODULE the module file, named the same in
# both. A kernel named *smp* runs on 4 CPUs (-smp 4, the test's --vcpus 4); one named
# *pcdev* gets QEMU's pc-testdev (-device pc-testdev), which sigvisor's Multiboot board
# has with --irqchip.
set -euo pipefail
out=$(realpath -m "$1") kernel=$2 kernel_as=$3 module=$4
qemu=$(command -v qemu-system-x86_64) ||
  { echo "multiboot_qemu_reference: qemu-system-x86_64 is missing: run tools/setup.sh" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/$(dirname "$kernel_as")" "$work/$(dirname "$module")"
cp "$kernel" "$work/$kernel_as"
cp "$module" "$work/$module"
name=$(basename "$kernel_as")
smp=(-smp 1)
[[ $name == *smp* ]] && smp=(-smp 4)
testdev=()
[[ $name == *pcdev* ]] && testdev=(-device pc-testdev)
set +e
(cd "$work" && timeout 120 "$qemu" -accel tcg "${smp[@]}" -kernel "$kernel_as" \
  -append "a=1 b=2" -initrd "$module x=y" -m 32 -display none -monitor none -no-reboot \
  -serial file:console -device isa-debug-exit,iobase=0xf4,iosize=4 "${testdev[@]}")
code=$?
set -e
{ echo "exit $code"; cat "$work/console"; } >"$out"
