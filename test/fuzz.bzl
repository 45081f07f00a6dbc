"""leash_fuzz_test: a libFuzzer-compatible fuzz target that also runs as a normal test.

The target's sources define `LLVMFuzzerTestOneInput`. The test links them with
//test:fuzz_replay_main, which feeds every file of the checked-in seed corpus and then a
fixed, seeded set of mutations of those seeds, so a crash or hang on a known input fails
`bazel test`. The same sources build under clang -fsanitize=fuzzer for open-ended fuzzing.
"""

load("//:copts.bzl", "LEASH_COPTS")

def leash_fuzz_test(name, srcs, corpus, deps = [], mutations = 2000):
    native.cc_test(
        name = name,
        srcs = srcs,
        copts = LEASH_COPTS,
        data = native.glob([corpus + "/**"]),
        args = [
            # Tests run from the workspace root of their runfiles.
            "--corpus=" + native.package_name() + "/" + corpus,
            "--mutations=%d" % mutations,
        ],
        deps = deps + ["//test:fuzz_replay_main"],
        size = "small",
    )
