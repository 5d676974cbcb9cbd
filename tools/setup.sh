#!/usr/bin/env bash
# Installs every Debian package sigvisor's build and tests need. Idempotent: on a
# machine that has them all it only checks. Needs root (or sudo) for apt-get.
set -euo pipefail

packages=(
  bazel-bootstrap       # Bazel 4.2.3, run offline (see WORKSPACE)
  g++                   # C++20 host code and the freestanding guest kernel
  binutils              # objcopy embeds guest images into the sigvisor binary
  linux-libc-dev        # <linux/kvm.h>
  libabsl-dev           # Abseil: Status, StrFormat, flags, time
  libcapstone-dev       # x86 disassembly
  libgtest-dev          # GoogleTest / GoogleMock
  libbenchmark-dev      # host micro-benchmarks in perf/
  nlohmann-json3-dev    # JSON reports
  libseccomp-dev        # the run-loop seccomp sandbox (vmm/sandbox)
  clang                 # --config=fuzz (libFuzzer) and sanitizer builds
  libclang-rt-14-dev    # libFuzzer and the sanitizer runtimes for clang 14
  qemu-system-x86       # tests: sigvisor's images also boot under QEMU (TCG)
  gcc-mipsel-linux-gnu  # the MIPS32r2 guest kernel images (guest-kit/build/mips.bzl)
  binutils-mipsel-linux-gnu # their linker and objcopy
  qemu-system-mips      # tests/mips_qemu_test.sh: qemu-system-mipsel -M malta, the reference
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q "${missing[@]}"
