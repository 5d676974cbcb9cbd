"""Multiboot v1 test kernels, built the way kernels for `qemu -kernel` usually are.

The host gcc assembles and links them with binutils directly (no C library, no
cc_toolchain features): `elf32` gives an ELF32 i386 file (`-m32`, `-Wl,-m,elf_i386`),
otherwise ELF64; `flat` turns the linked file into a flat binary (objcopy -O binary)
for kernels whose Multiboot header carries the address fields (the a.out kludge).
Each is built once, in the guest configuration (guest_configuration.bzl).
"""

load(":guest_configuration.bzl", "guest_configured", "guest_internal_name")

def multiboot_kernel(name, src, linker_script, hdrs = [], elf32 = True, flat = False, **kwargs):
    arch = ["-m32", "-Wl,-m,elf_i386"] if elf32 else ["-m64"]
    built = guest_internal_name(name)
    linked = guest_internal_name(name + ".elf") if flat else built
    native.genrule(
        name = name + "_link" if flat else name + "_gen",
        srcs = [src, linker_script] + hdrs,
        outs = [linked],
        cmd = " ".join([
            "gcc",
        ] + arch + [
            "-nostdlib",
            "-static",
            "-no-pie",
            "-fno-pic",
            "-Wl,--build-id=none",
            "-Wl,--no-warn-rwx-segments",
            "-Wl,-z,max-page-size=4096",
            "-Wl,-T,$(location %s)" % linker_script,
            "-I$$(dirname $(location %s))" % src,
            "-o $@",
            "$(location %s)" % src,
        ]),
        visibility = ["//visibility:private"],
    )
    if flat:
        native.genrule(
            name = name + "_gen",
            srcs = [linked],
            outs = [built],
            cmd = "objcopy -O binary $< $@",
            visibility = ["//visibility:private"],
        )
    guest_configured(name = name, actual = built, **kwargs)
