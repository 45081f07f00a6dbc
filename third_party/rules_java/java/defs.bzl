"""Offline @rules_java: Bazel registers Java toolchains that load these names; Leash has no Java."""

java_import = native.java_import
java_runtime = native.java_runtime
java_toolchain = native.java_toolchain
java_library = native.java_library
java_binary = native.java_binary
