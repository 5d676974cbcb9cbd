"""fuzz_target: a libFuzzer target and a test that replays its seed corpus.

`bazel build --config=fuzz //tests/fuzz:NAME` links NAME with libFuzzer (clang,
-fsanitize=fuzzer,address); tests/fuzz/run_fuzzers.sh runs each for a bounded time.
In every other configuration NAME links replay_main.cc instead, and NAME_seeds (a
cc_test, part of `bazel test //...`) replays the checked-in corpus through it, so the
targets keep compiling and every seed keeps passing (under --config=asan too).
"""

def fuzz_target(name, srcs, deps = [], corpus = None):
    corpus = corpus or "corpus/" + name
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + select({
            "//tests/fuzz:libfuzzer": [],
            "//conditions:default": ["//tests/fuzz:replay_main"],
        }),
        linkopts = select({
            "//tests/fuzz:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        testonly = True,
    )
    native.sh_test(
        name = name + "_seeds",
        size = "small",
        srcs = ["replay_seeds.sh"],
        args = ["$(location :%s)" % name, "tests/fuzz/" + corpus],
        data = [":" + name] + native.glob([corpus + "/**"]),
    )
