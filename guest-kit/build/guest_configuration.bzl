"""The guest configuration: guest code is built the same way whatever the host's flags.

A guest image does not change with the host's sanitizer: `--config=sanitize` (and any
`--copt=-fsanitize=...`) instruments the VMM, never a guest, which has no runtime for
it. Without this transition every guest image, MIPS image and the Linux initramfs would
be rebuilt in each sanitized configuration's output tree, to the same bytes. With it,
every guest target is built in one configuration, "the host's flags less the
host-only ones", which the plain build and the sanitized build both arrive at, so the
sanitized pass finds the guests already built by the plain one and compiles host code
only.

Why it sets each option, also in a plain build: Bazel names a transitioned
configuration's output directory by a hash of the options the transition set and their
values. For the plain and the sanitized build to meet in one directory, the transition
must set the same options to the same values in both; a flag it only removes would be
"set" in one build and not in the other. So it removes the host-only flags and then
appends `-fno-sanitize=all` (the guest rules pass it too) to copt and linkopt, and gives
the configuration its own platform suffix.
"""

# Flags that belong to the host's instrumented builds and never to a guest. The
# sanitizer configurations of .bazelrc may add only flags this recognises, or every
# guest target is rebuilt under them (and built with them).
_HOST_ONLY_PREFIXES = ["-fsanitize", "-fno-sanitize"]
_HOST_ONLY_FLAGS = ["-fno-omit-frame-pointer", "-U_FORTIFY_SOURCE", "-O1"]

# The guest configuration's marks: the flag every guest build ends with, and the
# suffix of its output directory (bazel-out/k8-opt-guest-ST-<hash>).
_GUEST_FLAG = "-fno-sanitize=all"
_GUEST_PLATFORM_SUFFIX = "-guest"

def _host_only(flag):
    if flag in _HOST_ONLY_FLAGS:
        return True
    for prefix in _HOST_ONLY_PREFIXES:
        if flag.startswith(prefix):
            return True
    return False

def _guest_flags(flags):
    # Idempotent: a guest target inside another (the user program inside a kernel
    # image) stays in the same configuration.
    return [flag for flag in flags if not _host_only(flag)] + [_GUEST_FLAG]

def _guest_transition_impl(settings, attr):
    return {
        "//command_line_option:copt": _guest_flags(settings["//command_line_option:copt"]),
        "//command_line_option:linkopt": _guest_flags(settings["//command_line_option:linkopt"]),
        "//command_line_option:platform_suffix": _GUEST_PLATFORM_SUFFIX,
    }

guest_transition = transition(
    implementation = _guest_transition_impl,
    inputs = [
        "//command_line_option:copt",
        "//command_line_option:linkopt",
    ],
    outputs = [
        "//command_line_option:copt",
        "//command_line_option:linkopt",
        "//command_line_option:platform_suffix",
    ],
)

# Every rule that uses a Starlark transition names Bazel's allowlist.
GUEST_TRANSITION_ALLOWLIST = {
    "_allowlist_function_transition": attr.label(
        default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
    ),
}

def _guest_configured_impl(ctx):
    built = ctx.files.actual[0]
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = built)
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

# `guest_configured(name, actual)`: the file `name` is the one file of `actual`, built
# in the guest configuration. The guest macros (guest.bzl, mips.bzl, multiboot.bzl) put
# the rule that builds it at guest_internal_name(name) and this rule at `name`.
guest_configured = rule(
    implementation = _guest_configured_impl,
    attrs = dict({
        "actual": attr.label(allow_single_file = True, cfg = guest_transition, mandatory = True),
    }, **GUEST_TRANSITION_ALLOWLIST),
)

def guest_internal_name(name):
    """Where a guest macro puts the rule that builds `name` before it is configured."""
    return "_guest/" + name
