"""Compiler options for Leash's own code: warnings are errors. Generated code does not use them."""

LEASH_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
]
