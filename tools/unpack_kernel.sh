#!/usr/bin/env bash
# Unpacks Debian's kernel package from the lane cache (tools/setup.sh fetches it) into
# CACHE/unpacked-KVER: boot/vmlinuz-KVER (also as CACHE/unpacked-KVER/vmlinuz) and the
# modules the hardware lane loads (kvm, kvm-amd and what they need). No System.map:
# `sigvisor trace` names the kernel's functions from its own kallsyms. Two users: the
# hardware lane boots this kernel under QEMU, and the Linux-guest tests boot it under
# sigvisor. Idempotent; prints the unpacked folder.
#
# Usage: tools/unpack_kernel.sh [CACHE]   (default $SIGVISOR_LANE_CACHE or
#                                          /var/cache/sigvisor/hwkvm)
set -euo pipefail
cache=${1:-${SIGVISOR_LANE_CACHE:-/var/cache/sigvisor/hwkvm}}
kernel_deb=$(ls "$cache"/linux-image-*-amd64_*.deb 2>/dev/null | sort -V | tail -1 || true)
[[ -n $kernel_deb ]] || { echo "unpack_kernel: no linux-image package in $cache: run tools/setup.sh" >&2; exit 1; }
kver=$(basename "$kernel_deb"); kver=${kver#linux-image-}; kver=${kver%%_*}
unpacked=$cache/unpacked-$kver
if [[ ! -f $unpacked/vmlinuz ]]; then
  echo "unpack_kernel: unpacking $(basename "$kernel_deb")" >&2
  rm -rf "$unpacked.tmp"; mkdir -p "$unpacked.tmp"
  dpkg-deb --fsys-tarfile "$kernel_deb" | tar -x -C "$unpacked.tmp" --wildcards \
    "./boot/vmlinuz-$kver" "./lib/modules/$kver/kernel/arch/x86/kvm/*" \
    "./lib/modules/$kver/kernel/virt/lib/*" "./lib/modules/$kver/kernel/drivers/crypto/ccp/*"
  cp "$unpacked.tmp/boot/vmlinuz-$kver" "$unpacked.tmp/vmlinuz"
  rm -rf "$unpacked"; mv "$unpacked.tmp" "$unpacked"
fi
echo "$unpacked"
