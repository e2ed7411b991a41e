"""Build gpuscan._gpuscan: one C extension, plus CUDA kernels for the GPUs that are there.

The kernels in kernels/ are compiled to objects by nvcc and linked into the extension with the
CUDA runtime linked statically, so importing needs neither libcudart nor a driver.  Which
kernels, decided once per build and printed on stdout (``pip install -v`` shows it; so does
``python -m gpuscan`` afterwards):
  GPUSCAN_CUDA_ARCHS unset  the architectures of the GPUs nvidia-smi lists (deduplicated), plus
                            PTX of the highest for newer GPUs; with no GPU visible (or no nvcc)
                            the CPU backend alone, which builds in seconds.
  GPUSCAN_CUDA_ARCHS=80;90  exactly these SM targets (plus PTX of the last), GPU or not: what
                            CI and wheel builds set.
  GPUSCAN_CUDA_ARCHS=none   the CPU backend alone.
  CUDA_HOME                 where to look for nvcc first (then PATH, then /usr/local/cuda).
"""
import hashlib
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
# The oldest architecture the kernels compile for: they use cp.async and __reduce_add_sync.
MIN_ARCH = 80


def say(message):
    """A line for the person building: stdout, which pip shows with -v (and on failure)."""
    print(f"gpuscan: {message}", flush=True)


def find_nvcc():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidates = [os.path.join(home, "bin", "nvcc")] if home else []
    candidates += [shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.realpath(path)
    return None


def run_text(cmd):
    """(stdout, None) of a command that succeeded, else (None, why it did not)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return None, "not found"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines() or [f"exit {proc.returncode}"]
        return None, lines[0]
    return proc.stdout, None


def visible_archs(smi_output):
    """SM targets from `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` ("8.6" -> 86),
    deduplicated, ascending."""
    return sorted({int(m.group(1) + m.group(2))
                   for m in re.finditer(r"^\s*(\d+)\.(\d)\s*$", smi_output, re.M)})


def fit_archs(wanted, supported):
    """The targets to compile for GPUs of the `wanted` architectures with an nvcc that knows
    `supported` (None: unknown): newer than nvcc knows -> nvcc's newest (its PTX runs there);
    older than MIN_ARCH -> dropped.  Returns (targets, notes)."""
    targets, notes = set(), []
    for arch in wanted:
        if arch < MIN_ARCH:
            notes.append(f"sm_{arch} is older than the kernels need (sm_{MIN_ARCH})")
        elif supported and arch not in supported:
            newest = max(supported)
            notes.append(f"nvcc does not know sm_{arch}: compiling sm_{newest} and its PTX")
            targets.add(newest)
        else:
            targets.add(arch)
    return sorted(targets), notes


def nvcc_archs(nvcc):
    out, _ = run_text([nvcc, "--list-gpu-arch"])
    return {int(a) for a in re.findall(r"compute_(\d+)", out or "")} or None


def cuda_plan(archs_env, nvcc):
    """(archs, note): the SM targets to compile, [] for the CPU backend alone, and why."""
    env = (archs_env or "").strip()
    if env.lower() == "none":
        return [], "GPUSCAN_CUDA_ARCHS=none"
    if nvcc is None:
        return [], "nvcc was not found (CUDA_HOME, PATH, /usr/local/cuda)"
    if env:
        words = [w for w in re.split(r"[;,\s]+", env) if w]
        if not all(w.isdigit() and int(w) >= MIN_ARCH for w in words):
            raise SystemExit(f"gpuscan: GPUSCAN_CUDA_ARCHS must be 'none' or SM numbers of at "
                             f"least {MIN_ARCH} such as '80;90', not {env!r}")
        return sorted({int(w) for w in words}), f"GPUSCAN_CUDA_ARCHS={env}"
    out, why = run_text(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"])
    if out is None:
        return [], f"no GPU was visible at build time (nvidia-smi: {why})"
    wanted = visible_archs(out)
    if not wanted:
        return [], "no GPU was visible at build time (nvidia-smi listed none)"
    archs, notes = fit_archs(wanted, nvcc_archs(nvcc))
    gpus = ", ".join(f"sm_{a}" for a in wanted)
    if not archs:
        return [], f"no visible GPU can run the kernels ({'; '.join(notes)})"
    return archs, f"the GPUs visible at build time ({gpus}{''.join('; ' + n for n in notes)})"


def gencode_flags(archs):
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    return flags + [f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}"]


def tree_files(top, suffixes):
    """Files under HERE/top (recursively) ending in one of suffixes, relative to HERE, sorted."""
    found = []
    for root, _, names in os.walk(os.path.join(HERE, top)):
        found += [os.path.relpath(os.path.join(root, n), HERE) for n in names if n.endswith(suffixes)]
    return sorted(found)


# A quoted include, or a quoted header named by a macro that is then included
# (kernels/stamp.cuh's `#include GS_AGENT`, with `#define GS_AGENT "agent/scan.cuh"`).
QUOTED_HEADER = re.compile(r'^\s*#\s*(?:include\s+|define\s+\w+\s+)"([^"]+\.(?:cuh|h))"', re.M)


def header_closure(src, include_dirs, every_header):
    """The headers src reaches through quoted includes, each looked up as the compiler does
    (beside the including file, then in include_dirs).  Should one not be found there, every
    header: a key that misses a dependency would keep a stale object."""
    found, todo = set(), [src]
    while todo:
        path = todo.pop()
        with open(path, encoding="utf-8") as f:
            names = QUOTED_HEADER.findall(f.read())
        for name in names:
            for folder in [os.path.dirname(path)] + include_dirs:
                candidate = os.path.normpath(os.path.join(folder, name))
                if os.path.isfile(candidate):
                    break
            else:
                return sorted(every_header)
            if candidate not in found:
                found.add(candidate)
                todo.append(candidate)
    return sorted(found)


def kernel_key(nvcc, flags, src, headers):
    """What a kernel object depends on, hashed: the compiler's version, the flags (less the
    include folders), the source and the headers it includes.  An object whose stamp file holds
    this key is current, wherever it was built: by content, not by time, so objects built on one
    machine are reused on another with the same nvcc (the GPU check carries them), and an edit
    rebuilds only the objects that include the edited file."""
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


# The sources that take longest to compile (two cores, sm_90, 2026-11-25: segreduce.cu 108 s,
# scan_ahead_seg.cu 81, teach.cu 57, scan_ahead.cu 54, hist.cu 53, scan_one_seg.cu 47,
# cpu/scan.c 40, cpu/reduce.c 30, scan_one.cu 23, reduce.cu 21; the other 60 files a few
# seconds each): started first, so that the short ones fill the cores at the end.
SLOW_FIRST = ("kernels/dispatch/segreduce.cu", "kernels/dispatch/instances/scan_ahead_seg.cu",
              "kernels/dispatch/teach.cu", "kernels/dispatch/instances/scan_ahead.cu",
              "kernels/dispatch/hist.cu", "kernels/dispatch/instances/scan_one_seg.cu",
              "csrc/cpu/scan.c", "csrc/cpu/reduce.c", "kernels/dispatch/instances/scan_one.cu",
              "kernels/dispatch/reduce.cu")


def slow_first(jobs):
    """(source, job) pairs, the slowest sources first (SLOW_FIRST), then the others in order."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    return sorted(jobs, key=lambda job: rank.get(os.path.relpath(job[0], HERE), len(rank)))


class BuildExt(build_ext):
    """build_ext that compiles the kernels with nvcc (when planned) and the C sources in one pool
    of os.cpu_count() workers, the slowest first, then links them.  (setuptools compiles an
    extension's C sources one at a time, after the kernels: a clean build took 7 min 16 s on two
    cores, where the work fits in half of that.)"""

    def build_extensions(self):
        self._kernel_jobs = []
        nvcc = find_nvcc()
        archs, note = cuda_plan(os.environ.get("GPUSCAN_CUDA_ARCHS"), nvcc)
        if archs:
            targets = ", ".join(f"sm_{a}" for a in archs) + f" + PTX compute_{archs[-1]}"
            say(f"compiling the CUDA kernels with {nvcc} for {targets}: {note} (minutes)")
            summary = f"CUDA kernels for {targets}"
            for ext in self.extensions:
                self._add_cuda(ext, nvcc, archs)
        else:
            say(f"building the CPU backend only: {note}")
            if nvcc is not None and note.startswith("no GPU"):
                say("to compile the CUDA kernels anyway, set GPUSCAN_CUDA_ARCHS (for example "
                    "GPUSCAN_CUDA_ARCHS=90 for Hopper) and build again")
            summary = f"no CUDA kernels: {note}"
        # module/hooks.c returns it in _gpuscan._config(): printable ASCII, no quote or backslash.
        literal = '"' + re.sub(r'[^ -~]|["\\]', "'", summary) + '"'
        for ext in self.extensions:
            ext.define_macros.append(("GS_BUILD_NOTE", literal))
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            self._pool = pool
            self.compiler.compile = self._compile_in_pool
            super().build_extensions()
            self._run(self._take_kernel_jobs())  # none: a stale object was removed, so build_ext ran
        say(f"built gpuscan._gpuscan with {summary}")

    def _run(self, jobs):
        """Run (source, job) pairs in the pool, the slowest first; raise the first failure."""
        futures = [self._pool.submit(job) for _, job in slow_first(jobs)]
        for future in futures:
            future.result()

    def _compile_in_pool(self, sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                         extra_preargs=None, extra_postargs=None, depends=None):
        """CCompiler.compile, each source a job in the pool beside the kernels' (which must be
        done before the link that follows)."""
        cc = self.compiler
        macros, objects, extra_postargs, pp_opts, build = cc._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = cc._get_cc_args(pp_opts, debug, extra_preargs)
        jobs = []
        for obj in objects:
            if obj in build:
                src, src_ext = build[obj]
                jobs.append((src, lambda obj=obj, src=src, src_ext=src_ext: cc._compile(
                    obj, src, src_ext, cc_args, extra_postargs, pp_opts)))
        self._run(self._take_kernel_jobs() + jobs)
        return objects

    def _take_kernel_jobs(self):
        jobs, self._kernel_jobs = self._kernel_jobs, []
        return jobs

    def _add_cuda(self, ext, nvcc, archs):
        cuda_root = os.path.dirname(os.path.dirname(nvcc))
        kdir = os.path.join(HERE, "kernels")
        sources = tree_files("kernels", (".cu",))
        headers = [os.path.join(HERE, h)
                   for h in tree_files("kernels", (".cuh", ".h")) + tree_files("include", (".h",))]
        # Under build/ in the source tree, not self.build_temp: an editable install makes a new
        # temporary build_temp each time, and the README's two commands would compile twice.
        outdir = os.path.join(HERE, "build", "kernels", "_".join(map(str, archs)))
        os.makedirs(outdir, exist_ok=True)
        flags = ["-O3", "-lineinfo", "-std=c++17", "-Xcompiler", "-fPIC", "-Xcompiler",
                 "-fvisibility=hidden", f"-I{kdir}", f"-I{os.path.join(HERE, 'include')}",
                 "-DGS_HAVE_CUDA"] + gencode_flags(archs)
        include_dirs = [kdir, os.path.join(HERE, "include")]
        if os.environ.get("GPUSCAN_PTXAS_VERBOSE"):
            flags.append("-Xptxas=-v")

        objects = []
        for name in sources:
            src = os.path.join(HERE, name)
            # kernels/dispatch/scan.cu -> dispatch_scan.o: one flat folder of objects.
            obj = os.path.join(outdir, os.path.relpath(name, "kernels")[:-3].replace(os.sep, "_")
                               + ".o")
            objects.append(obj)
            key = kernel_key(nvcc, flags, src, header_closure(src, include_dirs, headers))
            if not stale(obj, key):
                continue
            # Gone until rebuilt: build_ext, which compares the extension's sources and depends
            # with the .so before the pool has run, then relinks.
            for path in (obj, obj + ".key"):
                if os.path.exists(path):
                    os.remove(path)

            def compile_one(src=src, obj=obj, key=key):
                cmd = [nvcc, "-c", src, "-o", obj] + flags
                say(" ".join(cmd))
                subprocess.run(cmd, check=True)
                with open(obj + ".key", "w") as f:
                    f.write(key + "\n")

            self._kernel_jobs.append((src, compile_one))
        ext.extra_objects += objects
        ext.depends += objects
        ext.define_macros.append(("GS_HAVE_CUDA", "1"))
        ext.include_dirs.append(os.path.join(cuda_root, "include"))
        for lib in ("lib64", os.path.join("targets", "x86_64-linux", "lib"), "lib"):
            if os.path.isdir(os.path.join(cuda_root, lib)):
                ext.library_dirs.append(os.path.join(cuda_root, lib))
        ext.libraries += ["cudart_static", "stdc++", "dl", "rt"]


# The kernels NVRTC compiles for an Operator (csrc/cuda/nvrtc.c): their headers embedded in the
# extension as string literals, so that nothing is read from disk at run time.
NVRTC_HEADERS = (("agent/user.cuh", "kernels/agent/user.cuh"),
                 ("gpuscan/user_params.h", "include/gpuscan/user_params.h"))
NVRTC_HEADER_OUT = os.path.join("build", "gen", "cuda", "user_src.h")  # "cuda/user_src.h"


def c_literal(text):
    """text as a C string literal, one source line per line of it."""
    lines = text.splitlines(keepends=True)
    return "\n".join('    "' + line.replace("\\", "\\\\").replace('"', '\\"')
                     .replace("\n", "\\n") + '"' for line in lines) or '    ""'


def write_nvrtc_headers():
    """NVRTC_HEADER_OUT from NVRTC_HEADERS (rewritten only when it changes: no needless rebuild)."""
    texts = []
    for _, path in NVRTC_HEADERS:
        with open(os.path.join(HERE, path), encoding="utf-8") as f:
            texts.append(c_literal(f.read()))
    names = ", ".join(f'"{name}"' for name, _ in NVRTC_HEADERS)
    out = ("/* Generated by setup.py from " + " and ".join(p for _, p in NVRTC_HEADERS)
           + ": the headers of the kernels NVRTC compiles for an Operator (csrc/cuda/nvrtc.c). */\n"
           + f"#define GS_USER_NHEADERS {len(NVRTC_HEADERS)}\n"
           + f"static const char *const gs_user_header_name[GS_USER_NHEADERS] = {{ {names} }};\n"
           + "static const char *const gs_user_header_text[GS_USER_NHEADERS] = {\n"
           + ",\n".join(texts) + "\n};\n")
    path = os.path.join(HERE, NVRTC_HEADER_OUT)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == out:
                return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(out)


ext = Extension(
    "gpuscan._gpuscan",
    sources=tree_files("csrc", (".c",)),
    include_dirs=[numpy.get_include(), "include", "csrc", os.path.join("build", "gen")],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_22_API_VERSION")],
    extra_compile_args=["-std=c11", "-O3", "-fvisibility=hidden", "-pthread",
                        "-Wall", "-Wno-unused-function"],
    extra_link_args=["-pthread"],
    libraries=["pthread", "dl"],  # dl: dlopen of compiled Operators (glibc < 2.34 keeps it apart)
    depends=tree_files("csrc", (".h",)) + tree_files("include", (".h",)) + [NVRTC_HEADER_OUT],
)

if __name__ == "__main__":  # as pip and build run it; tests/test_build.py imports the helpers
    write_nvrtc_headers()
    setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
