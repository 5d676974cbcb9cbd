"""Rules for code that runs inside sigvisor guests.

Guest code is freestanding x86-64, compiled by the host toolchain with flags that
suit a host whose guest CPL0 is emulated (see docs/host-notes.md):
general registers only (no SSE/AVX/x87), none of the instructions KVM's emulator
gets wrong or rejects (popcnt, lzcnt/tzcnt, BMI, ADX, crc32), no red zone (the CPU
pushes exception frames onto the kernel stack), no stack protector (no TLS here),
no strict aliasing (kernel style).
"""

load(":guest_configuration.bzl", "guest_configured", "guest_internal_name")

GUEST_COPTS = [
    "-ffreestanding",
    "-fno-builtin",
    "-fno-stack-protector",
    "-fno-pic",
    "-fno-pie",
    "-mcmodel=small",
    "-mgeneral-regs-only",
    "-mno-red-zone",
    "-mno-popcnt",
    "-mno-lzcnt",
    "-mno-bmi",
    "-mno-bmi2",
    "-mno-adx",
    "-mno-crc32",
    "-fno-asynchronous-unwind-tables",
    "-fno-unwind-tables",
    "-fcf-protection=none",
    # Kernel code reads user structs through differently typed pointers, as Linux
    # does (and builds with this flag for the same reason).
    "-fno-strict-aliasing",
    "-U_FORTIFY_SOURCE",
    "-std=gnu11",
    # A guest has no runtime for a sanitizer. Guest images are built in the guest
    # configuration, which has none of the host's sanitizer flags
    # (guest_configuration.bzl); this keeps any guest compile uninstrumented.
    "-fno-sanitize=all",
]

def guest_library(name, srcs = [], hdrs = [], deps = [], copts = [], **kwargs):
    """A static library of guest code (kernel or user)."""
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        deps = deps,
        copts = GUEST_COPTS + copts,
        linkstatic = True,
        # Whole-archive linking: kernel and arch code call each other both ways, and
        # --gc-sections still drops whatever is unused.
        alwayslink = True,
        **kwargs
    )

def guest_image(name, linker_script, srcs = [], deps = [], copts = [], **kwargs):
    """A guest ELF image, linked statically at the addresses its linker script says.

    The output file is `name` (an ELF64 executable), built in the guest configuration
    (guest_configuration.bzl), so that no host build flavour rebuilds it. Link with
    `-nostdlib`: nothing from the host's C library may reach a guest.
    """
    native.cc_binary(
        name = guest_internal_name(name),
        srcs = srcs,
        deps = deps + [linker_script],
        copts = GUEST_COPTS + copts,
        linkopts = [
            "-nostdlib",
            "-fno-sanitize=all",
            "-static",
            "-no-pie",
            "-Wl,--build-id=none",
            "-Wl,-z,max-page-size=4096",
            "-Wl,-z,noexecstack",
            "-Wl,-T,$(location %s)" % linker_script,
        ],
        linkstatic = True,
        features = ["-pic"],
        testonly = kwargs.get("testonly", False),
        visibility = ["//visibility:private"],
    )
    guest_configured(name = name, actual = guest_internal_name(name), **kwargs)

def embedded_image(name, image, symbol, section = None, alignment = 16):
    """Turns an image file into an object file that a binary links in.

    Defines `<symbol>_start` and `<symbol>_end` around the image bytes, read-only,
    in `section` (default `.rodata.<name>`) aligned to `alignment`. The sigvisor
    binary embeds its guest images this way, so `sigvisor run` needs no file; the
    guest kernel embeds its user programs the same way (page-aligned).
    """
    section = section or ".rodata." + name
    native.genrule(
        name = name + "_obj",
        srcs = [image],
        outs = [name + ".o"],
        cmd = " && ".join([
            "cp $< $(@D)/%s.bin" % name,
            "cd $(@D)",
            ("objcopy -I binary -O elf64-x86-64 -B i386:x86-64 " +
             "--rename-section .data=%s,alloc,load,readonly,data,contents " +
             "--set-section-alignment %s=%d " +
             "--redefine-sym _binary_%s_bin_start=%s_start " +
             "--redefine-sym _binary_%s_bin_end=%s_end " +
             "--strip-symbol _binary_%s_bin_size " +
             # An empty, non-executable .note.GNU-stack: without it the linker takes
             # the object to need an executable stack and gives sigvisor one.
             "--add-section .note.GNU-stack=/dev/null " +
             "--set-section-flags .note.GNU-stack=contents,readonly " +
             "%s.bin %s.o") % (section, section, alignment, name, symbol, name, symbol, name, name, name),
            "rm %s.bin" % name,
        ]),
    )
    native.cc_library(
        name = name,
        srcs = [name + ".o"],
        linkstatic = True,
        alwayslink = True,
    )
