"""leash_proto_library: one .proto -> `<name>_cc_proto` (messages) and `<name>_cc_grpc` (services).

Code generation runs Debian's protoc (3.21) with grpc_cpp_plugin in a genrule; nothing is
fetched. Generated code is compiled without the project's -Werror (it is not ours to fix).
"""

def leash_proto_library(name, src, deps = [], grpc = False, visibility = None):
    """Generates C++ for `src` (a file under proto/).

    Args:
      name: base name; targets are `<name>_cc_proto` and, with grpc, `<name>_cc_grpc`.
      src: the .proto file, relative to this package.
      deps: other leash_proto_library base names (labels without suffix) this file imports.
      grpc: whether `src` declares services.
      visibility: visibility of the generated cc_library targets.
    """
    base = src[:-len(".proto")]
    outs = [base + ".pb.h", base + ".pb.cc"]
    if grpc:
        outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    dep_protos = [d + "_srcs" for d in deps]
    native.filegroup(name = name + "_srcs", srcs = [src] + dep_protos, visibility = visibility)
    grpc_flags = ""
    if grpc:
        grpc_flags = "--plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) --grpc_out=$(GENDIR)/proto "
    native.genrule(
        name = name + "_gen",
        srcs = [src] + dep_protos,
        outs = outs,
        cmd = ("protoc -Iproto -I/usr/include --cpp_out=$(GENDIR)/proto " + grpc_flags +
               "$(location " + src + ")"),
    )
    dep_cc = [d + "_cc_proto" for d in deps]
    native.cc_library(
        name = name + "_cc_proto",
        srcs = [base + ".pb.cc"],
        hdrs = [base + ".pb.h"],
        includes = ["."],
        deps = dep_cc + ["//third_party:protobuf"],
        visibility = visibility,
    )
    if grpc:
        native.cc_library(
            name = name + "_cc_grpc",
            srcs = [base + ".grpc.pb.cc"],
            hdrs = [base + ".grpc.pb.h"],
            includes = ["."],
            deps = [name + "_cc_proto", "//third_party:grpc++"],
            visibility = visibility,
        )
