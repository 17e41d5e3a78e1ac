"""Finds the CUDA libraries the GPU kit needs on the machine it runs on.

The kit carries none of CUDA's own libraries (the runtime, cuBLAS, NCCL):
they must match the driver, and a GPU machine has them. They are looked for,
in this order:

  1. the folders of LD_LIBRARY_PATH (the user's explicit choice);
  2. the nvidia/*/lib folders of Python's site-packages: PyTorch's CUDA
     wheels (CUDA 13: nvidia/cu13/lib; NCCL: nvidia/nccl/lib). Preferred
     over the toolkit so that the comparison with PyTorch runs on the very
     cuBLAS and NCCL that PyTorch loads;
  3. CUDA_HOME / CUDA_PATH, /usr/local/cuda and /usr/local/cuda-*;
  4. the system library folders.

A library is taken from a folder an earlier one came from when it is there,
so that libcublas and libcublasLt (which must match exactly) come from one
place. The choice is made binding by symbolic links in one folder that goes
first on the children's LD_LIBRARY_PATH.
"""

import glob
import os
import subprocess


def python_site_dirs(pythons, timeout):
    """site-packages folders of each interpreter, plus /opt/*/.venv ones."""
    dirs = []
    for python in pythons:
        try:
            out = subprocess.run(
                [python, "-c", "import site; print('\\n'.join("
                 "site.getsitepackages() + [site.getusersitepackages()]))"],
                capture_output=True, text=True, timeout=timeout).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        dirs += [d for d in out.splitlines() if d]
    # A PyTorch virtual environment that is not the python3 on PATH.
    dirs += sorted(glob.glob("/opt/*/.venv/lib/python3*/site-packages"))
    return dirs


def search_dirs(site_dirs, environ):
    """Existing folders to look in, in order of preference, each once."""
    dirs = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for site_dir in site_dirs:
        dirs += sorted(glob.glob(os.path.join(site_dir, "nvidia", "*", "lib")))
        dirs += sorted(glob.glob(os.path.join(site_dir, "nvidia", "*",
                                              "lib64")))
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(variable):
            dirs.append(os.path.join(environ[variable], "lib64"))
    dirs += ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]
    dirs += sorted(glob.glob("/usr/local/cuda-*/lib64"), reverse=True)
    dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64"]
    seen, unique = set(), []
    for d in dirs:
        if os.path.isdir(d) and os.path.realpath(d) not in seen:
            seen.add(os.path.realpath(d))
            unique.append(d)
    return unique


def choose(sonames, dirs, cuda_version):
    """({soname: path}, [problem]) for the libraries `sonames` names.

    A problem names a missing library, and any of another major version
    found instead (libcudart.so.12 where libcudart.so.13 is needed)."""
    chosen, problems = {}, []
    for soname in sorted(sonames):
        used_dirs = [os.path.dirname(p) for p in chosen.values()]
        for d in used_dirs + dirs:
            if os.path.exists(os.path.join(d, soname)):
                chosen[soname] = os.path.join(d, soname)
                break
        else:
            stem = soname.split(".so")[0] + ".so."
            others = sorted({os.path.join(d, name) for d in dirs
                             for name in os.listdir(d)
                             if name.startswith(stem)})
            if others:
                problems.append(
                    "%s not found; there is only %s: another major version "
                    "(the kit was built with CUDA %s)"
                    % (soname, ", ".join(others[:3]), cuda_version))
            else:
                problems.append("%s not found" % soname)
    return chosen, problems


def link_folder(chosen, folder):
    """Makes `folder` hold a link to each chosen library, under its soname."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    for soname, path in chosen.items():
        os.symlink(os.path.realpath(path), os.path.join(folder, soname))
