"""Tests that run as root against real kernel objects.

Such a test makes network namespaces, tmpfs mounts, accounts and nft rules on the host, so it
runs alone ("exclusive": two would race for the host's kernel state), outside Bazel's sandbox
("no-sandbox": the sandbox's own namespaces would hide the host's), and says that it needs root
("root"; test/fixtures/root.h fails it without).
"""

load("//:copts.bzl", "LEASH_COPTS")

ROOT_TEST_TAGS = [
    "exclusive",
    "no-sandbox",
    "root",
]

def leash_root_cc_test(name, srcs, deps, size = "large", **kwargs):
    """A cc_test of Leash's own code that runs as root; `size` large unless said."""
    native.cc_test(
        name = name,
        size = size,
        srcs = srcs,
        copts = LEASH_COPTS,
        tags = ROOT_TEST_TAGS,
        deps = deps,
        **kwargs
    )
