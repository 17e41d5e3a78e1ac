#!/usr/bin/env python3
"""Assembles the GPU kit from a --config=cuda bazel-bin (called by make.sh).

The kit is a folder that runs on a bare CUDA machine:

  run.sh and *.py                        the runner (see run.sh)
  manifest.json                          what is in it and what it needs
  bin/<package>/<name>                   binaries, laid out as in bazel-bin,
                                         so that `launch` finds
                                         ../worker/worker and `bench` finds
                                         ps_server/ps_server from bin/
  lib/<soname>                           every shared library they load
                                         that a bare machine lacks

Libraries are found with `ldd` on this machine. Those a CUDA machine has
anyway are not copied: glibc, libstdc++ and libgcc_s (the system's), the
driver (libcuda) and the CUDA runtime, cuBLAS and NCCL (found there by
run.sh). Everything else, our Debian packages (gRPC, protobuf, Abseil,
Gloo, ...) and the test binaries' own shared objects (_solib_k8), is copied
under its soname. Binaries and our own libraries are stripped of debug
information to keep the kit small (symbols stay, for backtraces).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

KIT_SIZE_LIMIT = 60 << 20

# Sonames never copied: the C and C++ runtimes of the target machine, the
# driver, and the CUDA libraries run.sh finds there.
SYSTEM_SONAME = re.compile(
    r"^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libmvec\.so|"
    r"libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|"
    r"libanl\.so|libstdc\+\+\.so|libgcc_s\.so)")
CUDA_SONAME = re.compile(
    r"^(libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libnccl\.so)")
RUNNER_FILES = ("run.sh", "kit_run.py", "cuda_libraries.py", "kit_summary.py",
                "torch_compare.py")


def fail(message):
    print("make_kit: " + message, file=sys.stderr)
    sys.exit(1)


def label_to_path(label):
    """//bench:gpu_bench -> bench/gpu_bench; //worker -> worker/worker."""
    package, _, name = label[2:].partition(":")
    return os.path.join(package, name or os.path.basename(package))


def shared_libraries(elf):
    """(soname, resolved path) for every library `elf` loads, via ldd."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    result = subprocess.run(["ldd", elf], capture_output=True, text=True,
                            env=env)
    if result.returncode != 0:
        fail("ldd %s failed: %s" % (elf, result.stderr.strip()))
    libraries = []
    for line in result.stdout.splitlines():
        line = line.strip()
        if "=> not found" in line:
            fail("%s needs %s, which is not found on this machine"
                 % (elf, line.split()[0]))
        match = re.match(r"^(\S+) => (\S+) \(0x[0-9a-f]+\)$", line)
        if match:
            libraries.append((match.group(1), match.group(2)))
    return libraries


def strip_debug(path):
    subprocess.run(["strip", "--strip-debug", path], check=True)


def read_tests(tests_xml):
    """[(label, args)] of the gpu tests, from `bazel query --output=xml`."""
    tests = []
    for rule in ElementTree.parse(tests_xml).getroot().iter("rule"):
        args = []
        for entry in rule.findall("list"):
            if entry.get("name") == "args":
                args = [s.get("value") for s in entry.findall("string")]
        tests.append((rule.get("name"), args))
    return sorted(tests)


def cuda_version():
    out = subprocess.run(["/usr/local/cuda/bin/nvcc", "--version"],
                         capture_output=True, text=True).stdout
    match = re.search(r"release (\d+)\.(\d+)", out)
    return match.group(0)[len("release "):] if match else "unknown"


def prepare_kit_dir(kit_dir):
    """Empties a previous kit in `kit_dir`; refuses any other folder."""
    if os.path.exists(kit_dir):
        if os.listdir(kit_dir) and not os.path.exists(
                os.path.join(kit_dir, "manifest.json")):
            fail("%s exists and is not a kit (no manifest.json); "
                 "name an empty or new folder" % kit_dir)
        shutil.rmtree(kit_dir)
    os.makedirs(os.path.join(kit_dir, "bin"))
    os.makedirs(os.path.join(kit_dir, "lib"))


def folder_size(root):
    sizes = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            sizes[os.path.relpath(path, root)] = os.path.getsize(path)
    return sizes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bazel_bin", required=True)
    parser.add_argument("--kit_dir", required=True)
    parser.add_argument("--tests_xml", required=True)
    parser.add_argument("--commit", default="unknown")
    parser.add_argument("binaries", nargs="+", help="Bazel labels")
    args = parser.parse_args()

    source_dir = os.path.dirname(os.path.abspath(__file__))
    prepare_kit_dir(args.kit_dir)
    tests = read_tests(args.tests_xml)
    labels = list(args.binaries) + [label for label, _ in tests]

    copied_libraries = {}  # soname -> source path
    cuda_sonames = set()
    for label in labels:
        relative = label_to_path(label)
        source = os.path.join(args.bazel_bin, relative)
        if not os.path.isfile(source):
            fail("%s was not built: %s is missing" % (label, source))
        target = os.path.join(args.kit_dir, "bin", relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)
        os.chmod(target, 0o755)
        strip_debug(target)
        for soname, path in shared_libraries(source):
            if CUDA_SONAME.match(soname):
                cuda_sonames.add(soname)
            elif not SYSTEM_SONAME.match(soname):
                copied_libraries.setdefault(soname, path)

    for soname, path in sorted(copied_libraries.items()):
        target = os.path.join(args.kit_dir, "lib", soname)
        shutil.copyfile(path, target)  # follows the soname's symlink
        os.chmod(target, 0o644)
        if "_solib_" in path:  # ours, built with -g1
            strip_debug(target)

    for name in RUNNER_FILES:
        target = os.path.join(args.kit_dir, name)
        shutil.copyfile(os.path.join(source_dir, name), target)
        os.chmod(target, 0o755)

    manifest = {
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": args.commit,
        "cuda_version": cuda_version(),
        # What run.sh must find on the target machine.
        "cuda_libraries": sorted(cuda_sonames),
        "binaries": {label: os.path.join("bin", label_to_path(label))
                     for label in args.binaries},
        "tests": [{"label": label,
                   "path": os.path.join("bin", label_to_path(label)),
                   "args": test_args} for label, test_args in tests],
        "libraries": sorted(copied_libraries),
    }
    with open(os.path.join(args.kit_dir, "manifest.json"), "w") as out:
        json.dump(manifest, out, indent=2)
        out.write("\n")

    sizes = folder_size(args.kit_dir)
    total = sum(sizes.values())
    if total > KIT_SIZE_LIMIT:
        biggest = sorted(sizes.items(), key=lambda item: -item[1])[:8]
        fail("the kit is %.1f MiB, over its %d MiB limit; largest: %s" % (
            total / 2**20, KIT_SIZE_LIMIT >> 20,
            ", ".join("%s %.1f MiB" % (n, s / 2**20) for n, s in biggest)))
    print("make_kit: %s: %d binaries, %d tests, %d libraries, %.1f MiB "
          "(limit %d MiB); needs CUDA %s there: %s" % (
              args.kit_dir, len(args.binaries), len(tests),
              len(copied_libraries), total / 2**20, KIT_SIZE_LIMIT >> 20,
              manifest["cuda_version"], " ".join(manifest["cuda_libraries"])))


if __name__ == "__main__":
    main()
