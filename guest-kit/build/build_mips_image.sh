#!/usr/bin/env bash
# Builds one MIPS32r2 (o32, little-endian) guest kernel image with Debian's
# mipsel-linux-gnu cross gcc: the user program (ulib + init) linked at 0x40000000,
# embedded page-aligned in the kernel, and the kernel (arch-neutral core +
# arch/mips/guest) linked at 0x80100000. Flags: docs/host-notes.md, "The MIPS target".
#
#   build_mips_image.sh OUT KERNEL_LD USER_LD "KERNEL_COPTS" "USER_COPTS" \
#     -- KERNEL_SRCS... -- USER_SRCS...
#
# KERNEL_COPTS: the variant's CONFIG_* switches; USER_COPTS: the user program's extra
# flags (empty but in a scratch build, mips.bzl).
#
# Run from the execution root (Bazel's genrule does); paths are workspace-relative.
set -euo pipefail

out=$1 kernel_ld=$2 user_ld=$3 variant_copts=$4 user_copts=$5
shift 5
[[ $1 == -- ]] || { echo "usage: see the header" >&2; exit 2; }
shift
kernel_srcs=()
while [[ $# -gt 0 && $1 != -- ]]; do kernel_srcs+=("$1"); shift; done
shift
user_srcs=("$@")

CC=${MIPS_CC:-mipsel-linux-gnu-gcc}
OBJCOPY=${MIPS_OBJCOPY:-mipsel-linux-gnu-objcopy}
if ! command -v "$CC" >/dev/null; then
  echo "build_mips_image: $CC is not installed (tools/setup.sh installs gcc-mipsel-linux-gnu)" >&2
  exit 1
fi

# The same spirit as GUEST_COPTS (guest.bzl): freestanding, no builtins turned into
# calls to themselves, no stack protector, kernel-style aliasing.
cflags=(
  -EL -march=mips32r2 -mabi=32 -msoft-float -G0 -fno-pic -fno-pie -mno-abicalls
  -ffreestanding -fno-builtin -nostdlib -fno-stack-protector -fno-strict-aliasing
  -fno-tree-loop-distribute-patterns -fno-asynchronous-unwind-tables -fno-unwind-tables
  -U_FORTIFY_SOURCE -std=gnu11 -O2 -g1
  -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror
  -I. -Iarch/mips/guest/include -Iguest-kit/uapi/arch/mips -Iguest-kit/user/arch/mips
)
# libgcc (64-bit division: __udivdi3, __umoddi3) is Debian's PIC, hard-float build;
# its division routines use neither, and --no-warn-mismatch silences the linker's
# "abicalls" and "-mhard-float" notes about them.
ldflags=(-EL -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-z,max-page-size=4096
         -Wl,--no-warn-rwx-segments -Wl,--no-warn-mismatch)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The user program: its own address space, so no kernel switches.
# shellcheck disable=SC2086  # its extra flags are words
"$CC" "${cflags[@]}" $user_copts "${ldflags[@]}" -T "$user_ld" -o "$work/init.elf" \
  "${user_srcs[@]}" -lgcc

# Embedded page-aligned in .user_program.init, as guest-kit/BUILD.bazel does on x86-64.
cp "$work/init.elf" "$work/user_program_init.bin"
(cd "$work" && "$OBJCOPY" -I binary -O elf32-tradlittlemips -B mips \
  --rename-section .data=.user_program.init,alloc,load,readonly,data,contents \
  --set-section-alignment .user_program.init=4096 \
  --redefine-sym _binary_user_program_init_bin_start=user_program_init_start \
  --redefine-sym _binary_user_program_init_bin_end=user_program_init_end \
  --strip-symbol _binary_user_program_init_bin_size \
  user_program_init.bin user_program_init.o)

# shellcheck disable=SC2086  # the variant's -D switches are words
"$CC" "${cflags[@]}" $variant_copts "${ldflags[@]}" -T "$kernel_ld" -o "$out" \
  "${kernel_srcs[@]}" "$work/user_program_init.o" -lgcc
