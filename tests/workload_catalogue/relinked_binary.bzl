"""relinked_binary: a cc_library's closure linked into an executable as cc_binary links
it, with some of the closure's libraries swapped for others.

Why not a configuration transition: Bazel 4 gives a transitioned configuration its own
output tree, so a sigvisor built with another catalogue that way would compile its
whole closure again (nearly 300 host files). Only two libraries of sigvisor read the
catalogue (the launch library's table and the embedded MIPS image); swapping those at
link time reuses every other object the product build made, and links with the same
command line as cc_binary.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _relinked_binary_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )

    # Each substitute's own objects, by the label of the library it replaces. Only its
    # own: what it depends on is in the closure already (here the header of the library
    # it replaces).
    replacing = {}
    for substitute, replaced in ctx.attr.substitutes.items():
        replacing[ctx.label.relative(replaced)] = [
            linker_input
            for linker_input in substitute[CcInfo].linking_context.linker_inputs.to_list()
            if linker_input.owner == substitute.label
        ]

    linker_inputs = []
    for linker_input in ctx.attr.library[CcInfo].linking_context.linker_inputs.to_list():
        if linker_input.owner in replacing:
            linker_inputs += replacing.pop(linker_input.owner)
        else:
            linker_inputs.append(linker_input)
    if replacing:
        # A renamed library must fail the build, not leave the product's in place.
        fail("not in the closure of %s: %s" % (
            ctx.attr.library.label,
            ", ".join([str(label) for label in replacing]),
        ))

    linked = cc_common.link(
        actions = ctx.actions,
        feature_configuration = feature_configuration,
        cc_toolchain = cc_toolchain,
        linking_contexts = [cc_common.create_linking_context(
            linker_inputs = depset(linker_inputs, order = "topological"),
        )],
        name = ctx.label.name,
        output_type = "executable",
    )
    return [DefaultInfo(
        files = depset([linked.executable]),
        executable = linked.executable,
    )]

relinked_binary = rule(
    implementation = _relinked_binary_impl,
    doc = "`library`'s closure linked, each key of `substitutes` in place of the " +
          "library its value names (a cc_library's label).",
    attrs = {
        "library": attr.label(mandatory = True, providers = [CcInfo]),
        "substitutes": attr.label_keyed_string_dict(mandatory = True, providers = [CcInfo]),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    executable = True,
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
