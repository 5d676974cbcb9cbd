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
  liblzma-dev           # a bzImage's payload decompressed on the host: xz and lzma,
  zlib1g-dev            #   gzip,
  libzstd-dev           #   zstd (vmm/loader/linux)
  clang                 # --config=fuzz (libFuzzer) and sanitizer builds
  libclang-rt-14-dev    # libFuzzer and the sanitizer runtimes for clang 14
  clang-format-14       # tools/check_format.sh: the include order (.clang-format)
  qemu-system-x86       # tests: sigvisor's images also boot under QEMU (TCG)
  gcc-mipsel-linux-gnu  # the MIPS32r2 guest kernel images (guest-kit/build/mips.bzl)
  binutils-mipsel-linux-gnu # their linker and objcopy
  qemu-system-mips      # tests/mips_qemu_test.sh: qemu-system-mipsel -M malta, the reference
  cpio                  # tests/hwkvm/lane.sh packs the hardware lane's initramfs
  slurmctld             # tests/slurm_bench_test: `bench --shard auto` under a real
  slurmd                #   one-node Slurm (tests/slurm/single_node.sh), with its
  slurm-client          #   clients and munge
  munge
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
updated=0
if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}" >&2
  "${sudo_cmd[@]}" apt-get update -q
  updated=1
  # Without recommends: QEMU's and Slurm's would bring desktop, audio, video and
  # plugin stacks that nothing here uses. Counted from an empty system with apt's
  # simulation, this list needs 305 packages and 1.42 GiB installed instead of 685
  # packages and 2.55 GiB.
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The hardware-KVM test lane (tests/hwkvm/lane.sh) boots Debian's own kernel, with
# busybox as its userland, under QEMU's TCG. Both are fetched as Debian packages into
# a cache and unpacked by the lane; nothing of them is installed on this machine.
lane_cache=${SIGVISOR_LANE_CACHE:-/var/cache/sigvisor/hwkvm}
if ! ls "$lane_cache"/linux-image-*-amd64_*.deb >/dev/null 2>&1 ||
   ! ls "$lane_cache"/busybox-static_*.deb >/dev/null 2>&1; then
  ((updated)) || "${sudo_cmd[@]}" apt-get update -q
  kernel_package=$(apt-cache depends linux-image-amd64 |
                   awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [[ -n $kernel_package ]] || { echo "setup: apt knows no linux-image-amd64 kernel" >&2; exit 1; }
  echo "setup: fetching $kernel_package and busybox-static into $lane_cache" >&2
  "${sudo_cmd[@]}" mkdir -p "$lane_cache"
  # apt-get download writes to the current folder, as the _apt user where it can.
  (cd "$lane_cache" && "${sudo_cmd[@]}" apt-get download -q "$kernel_package" busybox-static)
fi

# No System.map is fetched (it is in the kernel's 859 MB -dbg package): `sigvisor trace`
# names the kernel's functions from its own kallsyms (vmm/loader/linux/kallsyms.h).

# The Linux-guest tests (tests/linux_guest_test) boot that same Debian kernel under
# sigvisor: unpacked once per version, beside the package.
"${sudo_cmd[@]}" "$(dirname "$0")/unpack_kernel.sh" "$lane_cache" >/dev/null
