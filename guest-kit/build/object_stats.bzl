"""The size and stack usage of one guest object file, as the kernel build makes it.

`guest_object_stats` compiles one guest source with exactly the command line the
kernel images use for it (the C++ toolchain's own features for this compilation
mode, the --copt flags of .bazelrc, GUEST_COPTS and the variant's CONFIG_* switches:
the command comes from cc_common, not from a copy of the flags), adds
`-fstack-usage`, which changes no code, only writes the `.su` file, and runs
binutils' `size` and `nm` on the object. The result is a few X-macro lines for C++:

    SIGVISOR_OBJECT_SIZE("<variant>", "<file>", text, data, bss)
    SIGVISOR_STACK_USAGE("<variant>", "<function>", bytes, "<static|dynamic|...>")
    SIGVISOR_OBJECT_FUNCTION("<variant>", "<function>", bytes)

Why not the kernel's own object: Bazel keeps cc_binary's object files internal and
drops any undeclared output such as the `.su` file; a rule that declares both outputs
and takes its command line from the toolchain is the way to measure the same object.
(vmm/app/study/study_test.cc, ObjectStatsTest, checks it against the linked kernel: every function
the object defines has the same size in the kernel image's symbol table.)
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "C_COMPILE_ACTION_NAME")
load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("//guest-kit/build:guest.bzl", "GUEST_COPTS")
load("//guest-kit/build:guest_configuration.bzl", "GUEST_TRANSITION_ALLOWLIST", "guest_transition")

def _guest_object_stats_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features + ["pic"],
    )
    contexts = [dep[CcInfo].compilation_context for dep in ctx.attr.deps]
    src = ctx.file.src
    stem = ctx.label.name
    obj = ctx.actions.declare_file(stem + ".o")
    stack_usage = ctx.actions.declare_file(stem + ".su")
    out = ctx.actions.declare_file(stem + ".inc")

    variables = cc_common.create_compile_variables(
        feature_configuration = feature_configuration,
        cc_toolchain = cc_toolchain,
        source_file = src.path,
        output_file = obj.path,
        user_compile_flags = (ctx.fragments.cpp.copts + ctx.fragments.cpp.conlyopts +
                              GUEST_COPTS + ctx.attr.copts + ["-fstack-usage"]),
        quote_include_directories = depset(
            [".", ctx.bin_dir.path],
            transitive = [c.quote_includes for c in contexts],
        ),
        include_directories = depset(transitive = [c.includes for c in contexts]),
        system_include_directories = depset(transitive = [c.system_includes for c in contexts]),
        preprocessor_defines = depset(transitive = [c.defines for c in contexts]),
    )
    arguments = cc_common.get_memory_inefficient_command_line(
        feature_configuration = feature_configuration,
        action_name = C_COMPILE_ACTION_NAME,
        variables = variables,
    )
    env = cc_common.get_environment_variables(
        feature_configuration = feature_configuration,
        action_name = C_COMPILE_ACTION_NAME,
        variables = variables,
    )
    compiler = cc_common.get_tool_for_action(
        feature_configuration = feature_configuration,
        action_name = C_COMPILE_ACTION_NAME,
    )
    ctx.actions.run(
        executable = compiler,
        arguments = arguments,
        env = env,
        inputs = depset([src], transitive = [c.headers for c in contexts] + [cc_toolchain.all_files]),
        outputs = [obj, stack_usage],
        mnemonic = "GuestObjectStats",
        progress_message = "Measuring %s (%s)" % (src.short_path, ctx.attr.variant),
    )

    # gcc names the .su after the object (-o x.o -> x.su), one line per function:
    # "file:line:col:function<TAB>bytes<TAB>qualifier".
    ctx.actions.run_shell(
        inputs = [obj, stack_usage],
        outputs = [out],
        command = " && ".join([
            ("size -B {obj} | awk 'NR == 2 {{ printf \"SIGVISOR_OBJECT_SIZE(\\\"{variant}\\\", " +
             "\\\"{file}\\\", %s, %s, %s)\\n\", $1, $2, $3 }}' > {out}"),
            ("awk -F '\\t' '{{ n = split($1, p, \":\"); printf \"SIGVISOR_STACK_USAGE(" +
             "\\\"{variant}\\\", \\\"%s\\\", %s, \\\"%s\\\")\\n\", p[n], $2, $3 }}' {su} >> {out}"),
            ("nm -S -t d --defined-only {obj} | awk 'NF == 4 && ($3 == \"t\" || $3 == \"T\") " +
             "{{ printf \"SIGVISOR_OBJECT_FUNCTION(\\\"{variant}\\\", \\\"%s\\\", %d)\\n\", $4, " +
             "$2 + 0 }}' >> {out}"),
        ]).format(
            obj = obj.path,
            su = stack_usage.path,
            out = out.path,
            variant = ctx.attr.variant,
            file = src.basename.replace(".c", ".o"),
        ),
        mnemonic = "GuestObjectStatsTable",
    )
    return [DefaultInfo(files = depset([out]))]

# Measured in the guest configuration, as the kernel images are built.
guest_object_stats = rule(
    implementation = _guest_object_stats_impl,
    cfg = guest_transition,
    attrs = dict({
        "src": attr.label(allow_single_file = [".c"], mandatory = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "variant": attr.string(mandatory = True),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    }, **GUEST_TRANSITION_ALLOWLIST),
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
