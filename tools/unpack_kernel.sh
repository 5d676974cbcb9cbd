#!/usr/bin/env bash
# Unpacks Debian's kernel package from the lane cache (tools/setup.sh fetches it) into
# CACHE/unpacked-KVER: boot/vmlinuz-KVER (also as CACHE/unpacked-KVER/vmlinuz) and the
# modules the hardware lane loads (kvm, kvm-amd and what they need), and its System.map
# as CACHE/unpacked-KVER/System.map for `sigvisor trace --symbols`: Debian's image
# package holds a one-line placeholder, the real map is in linux-image-KVER-dbg (859 MB),
# taken when that package is in CACHE too. Two users: the
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
map=./boot/System.map-$kver
dbg_deb=$(ls "$cache"/linux-image-"$kver"-dbg_*.deb 2>/dev/null | sort -V | tail -1 || true)
if [[ ! -s $unpacked/System.map ]] || { [[ -n $dbg_deb ]] && (( $(wc -l <"$unpacked/System.map") < 2 )); }; then
  if [[ -n $dbg_deb ]]; then
    dpkg-deb --fsys-tarfile "$dbg_deb" | tar -x -O "./usr/lib/debug${map#.}" >"$unpacked/System.map.tmp"
  else
    dpkg-deb --fsys-tarfile "$kernel_deb" | tar -x -O "$map" >"$unpacked/System.map.tmp"
  fi
  mv "$unpacked/System.map.tmp" "$unpacked/System.map"
fi
echo "$unpacked"
