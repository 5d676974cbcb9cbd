"""MIPS32r2 (o32, little-endian) guest kernel images, built with Debian's cross gcc.

The host's cc toolchain builds x86-64 only, so, as multiboot.bzl does for its test
kernels, a genrule runs the compiler directly: build_mips_image.sh compiles and links
the user program (guest-kit/user with its arch/mips part) at 0x40000000, embeds it,
and links the kernel (guest-kit/kernel + guest-kit/lib + arch/mips/guest) at
0x80100000 with the variant's CONFIG_* switches. The flags are those of
docs/host-notes.md, "The MIPS target".
"""

load("//guest-kit/build:guest_configuration.bzl", "guest_configured", "guest_internal_name")
load("//guest-kit/build:variants.bzl", "variant_copts")

_SCRIPT = "//guest-kit/build:build_mips_image.sh"
_KERNEL_LD = "//arch/mips/guest:kernel.ld"
_USER_LD = "//guest-kit/user:arch/mips/user.ld"
_KERNEL_SRCS = ["//arch/mips/guest:srcs", "//guest-kit/kernel:srcs", "//guest-kit/lib:srcs"]
_USER_SRCS = ["//guest-kit/user:mips_srcs", "//guest-kit/lib:srcs"]
_HDRS = [
    "//arch/mips/guest:hdrs",
    "//guest-kit/abi:sigvisor_abi.h",
    "//guest-kit/abi:workloads.inc",
    "//guest-kit/kernel:hdrs",
    "//guest-kit/lib:hdrs",
    "//guest-kit/uapi:mips_hdrs",
    "//guest-kit/user:mips_hdrs",
]

def mips_kernel_image(name, variant, user_srcs = [], user_copts = [], hdrs = [], **kwargs):
    """The MIPS kernel image `name` (an ELF32 file) of `variant` (variants.bzl), built
    once in the guest configuration (guest_configuration.bzl).

    `user_srcs`, `user_copts` and `hdrs` add files and flags to the user program: a
    scratch build's (tests/workload_catalogue adds a workload); the product has none."""
    native.genrule(
        name = name + "_gen",
        srcs = _KERNEL_SRCS + [s for s in _USER_SRCS if s not in _KERNEL_SRCS] + _HDRS +
               [_KERNEL_LD, _USER_LD] + user_srcs + hdrs,
        outs = [guest_internal_name(name)],
        tools = [_SCRIPT],
        cmd = " ".join([
            "$(location %s)" % _SCRIPT,
            "$@",
            "$(location %s)" % _KERNEL_LD,
            "$(location %s)" % _USER_LD,
            "'%s'" % " ".join(variant_copts(variant)),
            "'%s'" % " ".join(user_copts),
            "--",
        ] + ["$(locations %s)" % src for src in _KERNEL_SRCS] + ["--"] +
          ["$(locations %s)" % src for src in _USER_SRCS + user_srcs]),
        visibility = ["//visibility:private"],
    )
    guest_configured(name = name, actual = guest_internal_name(name), **kwargs)
