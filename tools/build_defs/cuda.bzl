"""cuda_library: .cu sources compiled by /usr/local/cuda/bin/nvcc.

The targets exist only under `--config=cuda` (see .bazelrc); a plain build
skips them (they are incompatible with the default platform), so nothing but
`--config=cuda` needs the CUDA toolkit.
"""

_NVCC = "/usr/local/cuda/bin/nvcc"

# Ampere (A100) and Hopper (H100/H200) machine code, plus PTX so that newer
# GPUs can JIT-compile it.
_NVCC_ARCH_FLAGS = " ".join([
    "--generate-code=arch=compute_80,code=sm_80",
    "--generate-code=arch=compute_90,code=[sm_90,compute_90]",
])

CUDA_ONLY = select({
    "//tools/build_defs:cuda_enabled": [],
    "//conditions:default": ["//tools/build_defs:cuda_build_requested"],
})

def cuda_library(name, srcs, hdrs = [], cu_includes = [], deps = [], visibility = None):
    """A cc_library whose `srcs` are .cu files (their headers go in `hdrs`).

    The .cu files may include `hdrs`, the files in `cu_includes` (other
    headers of this repository, named from its root) and the CUDA toolkit's
    headers; `deps` are linked in and provide headers to users.
    """
    objs = []
    for src in srcs:
        obj = src[:-len(".cu")] + ".cu.o"
        native.genrule(
            name = name + "_" + src.replace("/", "_").replace(".", "_"),
            srcs = [src] + hdrs + cu_includes,
            outs = [obj],
            cmd = ("%s -c -std=c++17 -O3 -Xcompiler -fPIC %s -I. -I$(GENDIR) " +
                   "-o $@ $(location %s)") % (_NVCC, _NVCC_ARCH_FLAGS, src),
            message = "nvcc " + src,
            target_compatible_with = CUDA_ONLY,
        )
        objs.append(obj)
    native.cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["//third_party:cuda"],
        target_compatible_with = CUDA_ONLY,
        visibility = visibility,
    )
