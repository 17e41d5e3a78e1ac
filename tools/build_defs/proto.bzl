"""cc_grpc_proto_library: C++ messages and gRPC services from .proto files.

Uses the system `protoc` and `grpc_cpp_plugin` (Debian's protobuf-compiler and
protobuf-compiler-grpc), because Bazel's own proto rules would download
protobuf sources. Files are generated beside the .proto in the output tree, so
`proto/foo.proto` is included as "proto/foo.pb.h" (and "proto/foo.grpc.pb.h").
"""

_PROTOC = "/usr/bin/protoc"
_GRPC_PLUGIN = "/usr/bin/grpc_cpp_plugin"

def cc_grpc_proto_library(name, srcs, deps = [], services = True, visibility = None):
    """Generates and compiles C++ code for `srcs`.

    Args:
      name: the cc_library to create; depend on it to use the messages.
      srcs: .proto files of this package.
      deps: other cc_grpc_proto_library targets whose .proto files `srcs` import.
      services: also run grpc_cpp_plugin (set False for message-only files).
      visibility: visibility of the cc_library.
    """
    stems = [src[:-len(".proto")] for src in srcs]
    outs = [s + ".pb.h" for s in stems] + [s + ".pb.cc" for s in stems]
    if services:
        outs += [s + ".grpc.pb.h" for s in stems] + [s + ".grpc.pb.cc" for s in stems]

    # The .proto files import each other from the repository's root
    # ("proto/variable.proto"). That root is "." in distrt's own workspace
    # and "external/distrt" where another workspace uses distrt.
    repository = native.repository_name().lstrip("@")
    root = "external/" + repository if repository else "."
    out_dir = "$(GENDIR)/" + root if repository else "$(GENDIR)"
    grpc_flags = ""
    if services:
        grpc_flags = "--plugin=protoc-gen-grpc=%s --grpc_out=%s " % (_GRPC_PLUGIN, out_dir)

    native.filegroup(
        name = name + "_srcs",
        srcs = srcs + [d + "_srcs" for d in deps],
        visibility = visibility,
    )
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = outs,
        cmd = ("%s -I%s --cpp_out=%s " % (_PROTOC, root, out_dir)) + grpc_flags +
              " ".join(["$(location %s)" % s for s in srcs]),
        message = "protoc %s" % " ".join(srcs),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["//third_party:protobuf"] + (["//third_party:grpc"] if services else []),
        visibility = visibility,
    )
