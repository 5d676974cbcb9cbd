#!/usr/bin/env bash
# sigvisor's own stack is not executable: every object it links says so (the guest
# images objcopy embeds carry an empty .note.GNU-stack, guest-kit/build/guest.bzl), so
# the linker leaves PT_GNU_STACK RW. A guest that found a way into the VMM's stack
# would otherwise find it executable.
set -euo pipefail
binary=${1:?usage: stack_not_executable_test.sh SIGVISOR}
line=$(readelf -lW "$binary" | grep GNU_STACK) || { echo "no PT_GNU_STACK in $binary"; exit 1; }
echo "$line"
if [[ $line == *RWE* ]]; then
  echo "FAIL: $binary has an executable stack"
  exit 1
fi
