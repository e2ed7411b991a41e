"""Build gpuscan._gpuscan: one C extension, plus CUDA kernels when nvcc is found.

The kernels in kernels/*.cu are compiled to objects by nvcc and linked into the extension with
the CUDA runtime linked statically, so importing needs neither libcudart nor a driver.
Environment:
  GPUSCAN_CUDA_ARCHS  semicolon-separated SM targets, default "80;90" (Ampere, Hopper) plus PTX
                      of the last one for newer GPUs; "none" builds the CPU backend only.
  CUDA_HOME           where to look for nvcc first (then PATH, then /usr/local/cuda).
"""
import hashlib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ARCHS = "80;90"


def find_nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidates = [os.path.join(home, "bin", "nvcc")] if home else []
    candidates += [shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.realpath(path)
    return None


def gencode_flags(archs):
    flags = []
    for arch in archs:
        flags.append(f"-gencode=arch=compute_{arch},code=sm_{arch}")
    flags.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
    return flags


def tree_files(top, suffixes):
    """Files under HERE/top (recursively) ending in one of suffixes, relative to HERE, sorted."""
    found = []
    for root, _, names in os.walk(os.path.join(HERE, top)):
        found += [os.path.relpath(os.path.join(root, n), HERE) for n in names if n.endswith(suffixes)]
    return sorted(found)


def kernel_key(nvcc, flags, src, headers):
    """What a kernel object depends on, hashed: the compiler's version, the flags (less the
    include folders), the source and every header.  An object whose stamp file holds this key is
    current, wherever it was built: by content, not by time, so objects built on one machine are
    reused on another with the same nvcc (the GPU check carries them)."""
    h = hashlib.sha256()
    h.update(subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.encode())
    h.update(" ".join(f for f in flags if not f.startswith("-I")).encode())
    for path in [src] + sorted(headers):
        h.update(os.path.relpath(path, HERE).encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def stale(obj, key):
    try:
        with open(obj + ".key") as f:
            return f.read().strip() != key or not os.path.exists(obj)
    except OSError:
        return True


class BuildExt(build_ext):
    """build_ext that first compiles kernels/*.cu with nvcc and links the objects in."""

    def build_extensions(self):
        archs_env = os.environ.get("GPUSCAN_CUDA_ARCHS", DEFAULT_ARCHS).strip()
        nvcc = None if archs_env.lower() in ("", "none", "0") else find_nvcc()
        if nvcc is None:
            why = "GPUSCAN_CUDA_ARCHS=none" if archs_env.lower() in ("", "none", "0") \
                else "nvcc not found (CUDA_HOME, PATH, /usr/local/cuda)"
            print(f"gpuscan: {why}: building the CPU backend only", file=sys.stderr)
        else:
            archs = [a.strip() for a in archs_env.replace(",", ";").split(";") if a.strip()]
            print(f"gpuscan: building CUDA kernels with {nvcc} for sm_{', sm_'.join(archs)}",
                  file=sys.stderr)
            for ext in self.extensions:
                self._add_cuda(ext, nvcc, archs)
        super().build_extensions()

    def _add_cuda(self, ext, nvcc, archs):
        cuda_root = os.path.dirname(os.path.dirname(nvcc))
        kdir = os.path.join(HERE, "kernels")
        sources = tree_files("kernels", (".cu",))
        headers = [os.path.join(HERE, h)
                   for h in tree_files("kernels", (".cuh", ".h")) + tree_files("include", (".h",))]
        # Under build/ in the source tree, not self.build_temp: an editable install makes a new
        # temporary build_temp each time, and the README's two commands would compile twice.
        outdir = os.path.join(HERE, "build", "kernels", "_".join(archs))
        os.makedirs(outdir, exist_ok=True)
        flags = ["-O3", "-lineinfo", "-std=c++17", "-Xcompiler", "-fPIC", "-Xcompiler",
                 "-fvisibility=hidden", f"-I{kdir}", f"-I{os.path.join(HERE, 'include')}",
                 "-DGS_HAVE_CUDA"] + gencode_flags(archs)
        if os.environ.get("GPUSCAN_PTXAS_VERBOSE"):
            flags.append("-Xptxas=-v")

        def compile_one(name):
            src = os.path.join(HERE, name)
            # kernels/dispatch/scan.cu -> dispatch_scan.o: one flat folder of objects.
            obj = os.path.join(outdir, os.path.relpath(name, "kernels")[:-3].replace(os.sep, "_")
                               + ".o")
            key = kernel_key(nvcc, flags, src, headers)
            if stale(obj, key):
                cmd = [nvcc, "-c", src, "-o", obj] + flags
                print(" ".join(cmd), file=sys.stderr)
                subprocess.run(cmd, check=True)
                with open(obj + ".key", "w") as f:
                    f.write(key + "\n")
            return obj

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            objects = list(pool.map(compile_one, sources))
        ext.extra_objects += objects
        ext.define_macros.append(("GS_HAVE_CUDA", "1"))
        ext.include_dirs.append(os.path.join(cuda_root, "include"))
        for lib in ("lib64", os.path.join("targets", "x86_64-linux", "lib"), "lib"):
            if os.path.isdir(os.path.join(cuda_root, lib)):
                ext.library_dirs.append(os.path.join(cuda_root, lib))
        ext.libraries += ["cudart_static", "stdc++", "dl", "rt"]


ext = Extension(
    "gpuscan._gpuscan",
    sources=tree_files("csrc", (".c",)),
    include_dirs=[numpy.get_include(), "include", "csrc"],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION")],
    extra_compile_args=["-std=c11", "-O3", "-fvisibility=hidden", "-pthread",
                        "-Wall", "-Wno-unused-function"],
    extra_link_args=["-pthread"],
    libraries=["pthread"],
    depends=tree_files("csrc", (".h",)) + tree_files("include", (".h",)),
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
